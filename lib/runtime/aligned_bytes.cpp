#include "runtime/aligned_bytes.h"

#include <algorithm>
#include <cstring>

namespace fsq {

AlignedBytes allocate_aligned(size_t size) {
  return AlignedBytes(static_cast<std::byte*>(allocate_weight_memory(std::max(size, kWeightAlignment))));
}

AlignedBytes copy_aligned(std::span<const std::byte> bytes) {
  AlignedBytes out = allocate_aligned(bytes.size());
  if (!bytes.empty()) std::memcpy(out.get(), bytes.data(), bytes.size());
  return out;
}

}  // namespace fsq
