// Memory for model weights, backed by transparent huge pages (2 MiB) where the kernel allows.
//
// Why: a decode step streams every weight once, and with 4 KiB pages each 4 KiB of weights
// costs a TLB miss, which a virtual machine's nested page tables make dear. Measured on the
// 2-core Zen 4 VM of this project (one thread, 540 MB of SmolLM2-like f32 rows, the GEMV's
// loop): 21-24 GB/s with 4 KiB pages, 32-33 GB/s with huge pages; a plain read, 21 -> 31.
//
// Weights are many small tensors (SmolLM2's packed q_proj is 170 KB), so each one cannot get
// its own 2 MiB-aligned mapping: they are carved one after another out of shared chunks
// (kWeightChunkBytes, 2 MiB-aligned, madvise(MADV_HUGEPAGE)); a chunk is unmapped when the
// last allocation in it is released, and its huge pages that no live allocation touches are
// given back (MADV_DONTNEED) before that. Meant for memory that lives as long as a model does:
// a short-lived allocation between long-lived ones would keep its chunk's space until those
// go too. Where huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled = never),
// the chunks are ordinary pages and everything works as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fsq {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// Freed pieces' space is not reused, but the huge pages a released piece leaves empty go back
// to the kernel while the chunk lives (SmolLM2 quantize rtn/squeezellm peak RSS 1061 -> 1031
// MiB). 128 MiB chunks would save 12 MiB of f32 eval RSS (fewer partly filled last pages);
// before pages were given back they cost quantize 50-65 MiB, so chunks stay at 32 MiB.
inline constexpr size_t kWeightChunkBytes = size_t{32} << 20;
// Every allocation starts on a cache line (what AVX-512 loads like best).
inline constexpr size_t kWeightAlignment = 64;

// `size` uninitialized bytes (at least one cache line), kWeightAlignment-aligned, from a
// huge-page chunk; requests above a quarter of a chunk get a chunk of their own. Throws
// std::bad_alloc when the system has no memory left. Thread-safe.
void* allocate_weight_memory(size_t size);

// Gives back memory from allocate_weight_memory (null is ignored). Thread-safe.
void release_weight_memory(void* p) noexcept;

// Bytes mapped for weight chunks now (for tests and memory reports).
int64_t weight_memory_mapped_bytes();

// The kernel's transparent huge page mode, the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise" or "never"), or
// "unavailable" where that file cannot be read: weights get huge pages under the first two.
std::string transparent_huge_pages_mode();

}  // namespace fsq
