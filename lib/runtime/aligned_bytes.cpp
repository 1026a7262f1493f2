#include "runtime/aligned_bytes.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace fsq {

AlignedBytes allocate_aligned(size_t size) {
  constexpr size_t kAlignment = 64;
  const size_t padded = (size + kAlignment - 1) / kAlignment * kAlignment;
  AlignedBytes out(static_cast<std::byte*>(std::aligned_alloc(kAlignment, std::max(padded, kAlignment))));
  if (!out) throw std::bad_alloc();
  return out;
}

AlignedBytes copy_aligned(std::span<const std::byte> bytes) {
  AlignedBytes out = allocate_aligned(bytes.size());
  if (!bytes.empty()) std::memcpy(out.get(), bytes.data(), bytes.size());
  return out;
}

}  // namespace fsq
