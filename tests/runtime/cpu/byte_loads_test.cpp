// load_fixed<N> (one or two loads combined in registers) against the little-endian value of
// the N bytes assembled one by one, for every N, at every alignment, with the bytes after
// the N-th differing so a load that reads too far shows.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/cpu/byte_loads.h"

namespace fsq::cpu {
namespace {

uint64_t little_endian(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

template <int N>
void expect_load_fixed(const std::vector<uint8_t>& bytes) {
  for (size_t off = 0; off + 8 <= bytes.size(); ++off) {
    EXPECT_EQ(load_fixed<N>(bytes.data() + off), little_endian(bytes.data() + off, N)) << N << " bytes at offset " << off;
    EXPECT_EQ(load_bytes(bytes.data() + off, N), little_endian(bytes.data() + off, N)) << N << " bytes at offset " << off;
  }
}

TEST(ByteLoads, FixedLoadsEqualTheLittleEndianBytes) {
  std::vector<uint8_t> bytes(24);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(0x91 + 37 * i);  // distinct, high bits set
  expect_load_fixed<1>(bytes);
  expect_load_fixed<2>(bytes);
  expect_load_fixed<3>(bytes);
  expect_load_fixed<4>(bytes);
  expect_load_fixed<5>(bytes);
  expect_load_fixed<6>(bytes);
  expect_load_fixed<7>(bytes);
  expect_load_fixed<8>(bytes);
}

}  // namespace
}  // namespace fsq::cpu
