// Facts about this process and machine that several commands report or plan with.
#pragma once

#include <cstdint>

namespace fsq {

// Peak resident set size of this process so far (getrusage ru_maxrss), in bytes.
int64_t peak_rss_bytes();
// Physical memory of this machine in bytes (0 when unknown), e.g. for a default --max-memory.
int64_t physical_memory_bytes();

// How much anonymous memory this process may use, and what sets it: the smallest of the
// physical memory, RLIMIT_DATA (which counts the heap and private writable maps, not mapped
// read-only files) and the cgroup's memory.max (cgroup v2). The default of --max-memory, so
// that a plan that says yes is not then stopped by a limit it did not know about.
struct MemoryLimit {
  int64_t bytes = 0;   // 0: unknown
  const char* source = "physical memory";  // "physical memory", "RLIMIT_DATA" or "cgroup memory.max"
};
MemoryLimit anonymous_memory_limit();

}  // namespace fsq
