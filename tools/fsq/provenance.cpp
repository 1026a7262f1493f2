#include "provenance.h"

#include <ctime>
#include <string>
#include <vector>

#include "build_info.h"
#include "common/atomic_file.h"

namespace fsq::cli {
namespace {

struct Invocation {
  std::vector<std::string> argv;
  std::time_t started = 0;
};

Invocation& invocation() {
  static Invocation inv;
  return inv;
}

std::string utc_iso8601(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string version_line() { return "fsq " + version() + " (commit " + commit() + ", " + build_type() + " build)"; }

nlohmann::json producer_json() { return {{"name", "fsq"}, {"version", version()}, {"commit", commit()}}; }

void record_invocation(int argc, const char* const* argv) {
  Invocation& inv = invocation();
  inv.argv.assign(argv, argv + argc);
  inv.started = std::time(nullptr);
}

nlohmann::json invocation_json() {
  const Invocation& inv = invocation();
  return {{"argv", inv.argv}, {"started_at", utc_iso8601(inv.started)}, {"fsq_version", version()},
          {"fsq_commit", commit()}};
}

void write_json_report(const std::string& path, nlohmann::json report) {
  report["invocation"] = invocation_json();
  write_file_atomic(path, report.dump(2) + "\n");
}

}  // namespace fsq::cli
