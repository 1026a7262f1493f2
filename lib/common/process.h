// Facts about this process and machine that several commands report or plan with.
#pragma once

#include <cstdint>

namespace fsq {

// Peak resident set size of this process so far (getrusage ru_maxrss), in bytes.
int64_t peak_rss_bytes();
// Physical memory of this machine in bytes (0 when unknown), e.g. for a default --max-memory.
int64_t physical_memory_bytes();

}  // namespace fsq
