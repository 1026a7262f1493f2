#include "common/staging.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <mutex>
#include <set>
#include <vector>

namespace fsq {
namespace {

namespace fs = std::filesystem;

struct Registry {
  std::mutex mutex;
  std::set<fs::path> paths;
};

// Never destroyed: the interrupt thread may use it while static destructors run.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// A decimal number written as std::to_string writes it (no sign, no leading zero).
std::optional<long long> parse_number(std::string_view s) {
  if (s.empty() || s.size() > 18 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

fs::path parent_folder_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

std::string staging_name(std::string_view dest_name, StagingKind kind, pid_t pid, unsigned n) {
  std::string name(dest_name);
  if (kind == StagingKind::Folder) return name + ".tmp-" + std::to_string(pid);
  return name + ".tmp." + std::to_string(pid) + "." + std::to_string(n);
}

std::optional<pid_t> staging_pid(std::string_view name, std::string_view dest_name, StagingKind kind) {
  const std::string_view infix = kind == StagingKind::Folder ? ".tmp-" : ".tmp.";
  if (name.size() <= dest_name.size() + infix.size() || name.substr(0, dest_name.size()) != dest_name ||
      name.substr(dest_name.size(), infix.size()) != infix)
    return std::nullopt;
  std::string_view rest = name.substr(dest_name.size() + infix.size());
  std::string_view pid_text = rest;
  if (kind == StagingKind::File) {
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || !parse_number(rest.substr(dot + 1))) return std::nullopt;
    pid_text = rest.substr(0, dot);
  }
  const auto pid = parse_number(pid_text);
  if (!pid || *pid <= 0 || *pid > INT_MAX) return std::nullopt;
  return static_cast<pid_t>(*pid);
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

int sweep_stale_staging(const fs::path& dest, StagingKind kind) {
  const std::string dest_name = dest.filename().string();
  if (dest_name.empty()) return 0;
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(parent_folder_of(dest), ec), end; !ec && it != end; it.increment(ec)) {
    const auto pid = staging_pid(it->path().filename().string(), dest_name, kind);
    if (!pid || *pid == ::getpid() || process_exists(*pid)) continue;
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (kind == StagingKind::File ? fs::is_regular_file(st) : fs::is_directory(st)) stale.push_back(it->path());
  }
  int removed = 0;
  for (const fs::path& p : stale) {
    std::error_code rm;
    removed += fs::remove_all(p, rm) > 0 && !rm;
  }
  return removed;
}

void create_staging(const fs::path& path, const std::function<void()>& op) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  op();  // throws: nothing was created
  r.paths.insert(path);
}

void commit_staging(const fs::path& path, const std::function<void()>& op) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  op();  // throws: still staged, the owner removes it
  r.paths.erase(path);
}

void remove_staging(const fs::path& path, const std::function<void()>& op) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.paths.erase(path);
  op();
}

void remove_all_staging_for_exit() {
  Registry& r = registry();
  r.mutex.lock();  // never unlocked: the process exits next
  // Files first (they may lie inside a registered folder), then folders.
  for (const fs::path& p : r.paths) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(p, ec))) fs::remove(p, ec);
  }
  for (const fs::path& p : r.paths) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  r.paths.clear();
}

}  // namespace fsq
