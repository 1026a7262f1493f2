// 64-byte aligned copies of packed weight bytes, as the CPU kernels read them (a cache line;
// also what AVX-512 loads like best), in huge-page weight memory (weight_memory.h says why).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "runtime/weight_memory.h"

namespace fsq {

struct WeightMemoryDeleter {
  void operator()(void* p) const { release_weight_memory(p); }
};
using AlignedBytes = std::unique_ptr<std::byte[], WeightMemoryDeleter>;

// `size` uninitialized bytes, 64-byte aligned (at least one cache line, even when 0).
AlignedBytes allocate_aligned(size_t size);
// A 64-byte aligned copy of `bytes` (at least one cache line, even when empty).
AlignedBytes copy_aligned(std::span<const std::byte> bytes);

template <typename T>
const T* aligned_as(const AlignedBytes& b) {
  return reinterpret_cast<const T*>(b.get());
}

}  // namespace fsq
