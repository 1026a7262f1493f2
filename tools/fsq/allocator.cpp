#include "allocator.h"

#include <malloc.h>

#include <cstdlib>

namespace fsq::cli {

void keep_working_buffers_in_heap() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes);
}

}  // namespace fsq::cli
