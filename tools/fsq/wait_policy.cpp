#include "wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace fsq::cli {

void ensure_passive_waits(char** argv) {
  constexpr const char* kReexecMarker = "FSQ_WAIT_POLICY_APPLIED";  // never exec twice
  if (std::getenv(kReexecMarker) != nullptr) return;
  setenv(kReexecMarker, "1", 1);
  bool missing = false;
  for (const auto& [name, value] : kPassiveWaitEnv) {
    if (std::getenv(name) != nullptr) continue;
    setenv(name, value, 1);
    missing = true;
  }
  if (missing) execv("/proc/self/exe", argv);
}

std::string thread_wait_settings() {
  std::string s;
  for (const auto& [name, value] : kPassiveWaitEnv) {
    const char* v = std::getenv(name);
    if (!s.empty()) s.push_back(' ');
    s.append(name);
    s.append(v ? "=" : " unset");
    if (v) s.append(v);
  }
  return s;
}

}  // namespace fsq::cli
