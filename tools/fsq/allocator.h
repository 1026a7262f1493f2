// glibc malloc settings for fsq's working buffers. A forward pass over a prompt allocates and
// frees activations of a few MiB per op (512 tokens x 1536 features of f32 is 3 MiB); glibc
// serves such blocks with fresh mmaps, or trims them off the heap top on free, so the kernel
// zeroes and page-faults them again on every op. Keeping blocks up to 32 MiB (glibc's
// largest mmap threshold) in the heap and trimming only past 256 MiB free at the top made
// SmolLM2 W4 prefill 512 on one thread ~1.5x faster (660 -> 1010 tok/s) at the same peak RSS.
// Either setting is left to the user where MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_
// is set.
#pragma once

namespace fsq::cli {

inline constexpr int kMmapThresholdBytes = 32 << 20;
inline constexpr int kTrimThresholdBytes = 256 << 20;

// Applies the two thresholds (call once, early in main).
void keep_working_buffers_in_heap();

}  // namespace fsq::cli
