// Who wrote an output and how: the version line, the producer record stored in packed
// checkpoints, and the invocation (argv, start time) that JSON reports carry. Timestamps go
// only into reports, never into checkpoints or calibration files, whose bytes must depend
// on their inputs alone.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fsq::cli {

// "fsq 0.1.0 (commit e4e4dc6, Release build)"
std::string version_line();
// {"name": "fsq", "version": ..., "commit": ...}
nlohmann::json producer_json();

// Called once by main, first thing: keeps argv and the start time.
void record_invocation(int argc, const char* const* argv);
// {"argv": [...], "started_at": "2026-01-02T03:04:05Z" (UTC), "fsq_version", "fsq_commit"}.
nlohmann::json invocation_json();
// `report` plus "invocation", written atomically to `path`.
void write_json_report(const std::string& path, nlohmann::json report);

}  // namespace fsq::cli
