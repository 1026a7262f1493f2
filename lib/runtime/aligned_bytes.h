// 64-byte aligned copies of packed weight bytes, as the CPU kernels read them (a cache line;
// also what AVX-512 loads like best).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>

namespace fsq {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte[], FreeDeleter>;

// `size` uninitialized bytes, 64-byte aligned (at least one cache line, even when 0).
AlignedBytes allocate_aligned(size_t size);
// A 64-byte aligned copy of `bytes` (at least one cache line, even when empty).
AlignedBytes copy_aligned(std::span<const std::byte> bytes);

template <typename T>
const T* aligned_as(const AlignedBytes& b) {
  return reinterpret_cast<const T*>(b.get());
}

}  // namespace fsq
