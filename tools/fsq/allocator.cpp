#include "allocator.h"

#include <malloc.h>

#include <cstdlib>
#include <string>

namespace fsq::cli {

void keep_working_buffers_in_heap() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes);
}

bool request_huge_pages() {
  constexpr const char* kTunable = "glibc.malloc.hugetlb";
  const char* current = std::getenv("GLIBC_TUNABLES");
  std::string value = current ? current : "";
  if (value.find(kTunable) != std::string::npos) return false;
  value += (value.empty() ? "" : ":") + std::string(kTunable) + "=1";
  setenv("GLIBC_TUNABLES", value.c_str(), 1);
  return true;
}

}  // namespace fsq::cli
