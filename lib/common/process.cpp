#include "common/process.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

namespace fsq {

int64_t peak_rss_bytes() {
  struct rusage u {};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

namespace {

// cgroup v2: memory.max of this process's cgroup ("max" or absent: no limit, 0).
int64_t cgroup_memory_max() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream max_file("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string value;
    if (!(max_file >> value) || value == "max") return 0;
    try {
      return std::stoll(value);
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

}  // namespace

MemoryLimit anonymous_memory_limit() {
  MemoryLimit limit{physical_memory_bytes(), "physical memory"};
  const auto lower = [&](int64_t bytes, const char* source) {
    if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) limit = {bytes, source};
  };
  struct rlimit data {};
  if (::getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur != RLIM_INFINITY)
    lower(static_cast<int64_t>(std::min<rlim_t>(data.rlim_cur, INT64_MAX)), "RLIMIT_DATA");
  lower(cgroup_memory_max(), "cgroup memory.max");
  return limit;
}

}  // namespace fsq
