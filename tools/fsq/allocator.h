// glibc malloc settings for fsq's working buffers. A forward pass over a prompt allocates and
// frees activations of a few MiB per op (512 tokens x 1536 features of f32 is 3 MiB); glibc
// serves such blocks with fresh mmaps, or trims them off the heap top on free, so the kernel
// zeroes and page-faults them again on every op. Keeping blocks up to 32 MiB (glibc's
// largest mmap threshold) in the heap and trimming only past 256 MiB free at the top made
// SmolLM2 W4 prefill 512 on one thread ~1.5x faster (660 -> 1010 tok/s) at the same peak RSS.
// Either setting is left to the user where MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_
// is set.
//
// Huge pages: a decode step streams every weight from DRAM once. On 4 KiB pages that is a TLB
// miss per 4 KiB and a hardware prefetcher that stops at each page; with malloc's blocks on
// transparent huge pages (glibc.malloc.hugetlb=1, for systems whose THP mode is "madvise")
// a single-core read kernel went from ~30 to ~35 GB/s, and SmolLM2 decode at one thread
// ~3 % faster (f32 59 -> 63 tok/s). glibc reads the tunable when a process starts, so fsq
// sets it and re-executes itself (wait_policy.h).
#pragma once

namespace fsq::cli {

// Adds glibc.malloc.hugetlb=1 to GLIBC_TUNABLES unless the user's GLIBC_TUNABLES names that
// tunable; returns whether the environment changed (then a re-exec applies it).
bool request_huge_pages();

inline constexpr int kMmapThresholdBytes = 32 << 20;
inline constexpr int kTrimThresholdBytes = 256 << 20;

// Applies the two thresholds (call once, early in main).
void keep_working_buffers_in_heap();

}  // namespace fsq::cli
