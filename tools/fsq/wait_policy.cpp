#include "wait_policy.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace fsq::cli {

void ensure_short_waits(char** argv) {
  constexpr const char* kReexecMarker = "FSQ_WAIT_POLICY_APPLIED";  // never exec twice
  if (std::getenv(kReexecMarker) != nullptr) return;
  setenv(kReexecMarker, "1", 1);
  const bool user_policy = std::getenv("OMP_WAIT_POLICY") != nullptr;
  bool missing = false;
  for (const auto& [name, value] : kWaitEnv) {
    if (std::getenv(name) != nullptr) continue;
    if (user_policy && std::string_view(name) == "GOMP_SPINCOUNT") continue;  // it would override theirs
    setenv(name, value, 1);
    missing = true;
  }
  if (missing) execv("/proc/self/exe", argv);
}

std::string thread_wait_settings() {
  std::string s;
  const auto add = [&](const char* name) {
    const char* v = std::getenv(name);
    if (!s.empty()) s.push_back(' ');
    s.append(name);
    s.append(v ? "=" : " unset");
    if (v) s.append(v);
  };
  add("OMP_WAIT_POLICY");
  for (const auto& [name, value] : kWaitEnv) add(name);
  return s;
}

}  // namespace fsq::cli
