#include "common/stale_temporaries.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/staging.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

struct TemporariesOwner {
  pid_t pid = 0;
  unsigned long long start = 0;  // clock ticks after boot; 0 when /proc could not tell
};

std::string read_proc_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Field 22 of /proc/<pid>/stat, the process's start time; 0 when it cannot be read.
unsigned long long start_ticks(pid_t pid) {
  const std::string text = read_proc_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t name_end = text.rfind(')');  // field 2, the command name, may hold spaces
  if (name_end == std::string::npos) return 0;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

// The kernel boot and pid namespace whose pids a record's owner pid means; the first line
// of every record.
std::string pid_space_line() {
  std::string boot = read_proc_text("/proc/sys/kernel/random/boot_id");
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  char ns[128] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  return "fsq-owner boot " + boot + " pidns " + std::string(ns, n > 0 ? static_cast<size_t>(n) : 0);
}

bool owner_alive(const TemporariesOwner& o) {
  if (!process_exists(o.pid)) return false;
  const unsigned long long now = start_ticks(o.pid);
  return now == 0 || o.start == 0 || now == o.start;
}

std::string owner_record_name(const TemporariesOwner& o) { return std::to_string(o.pid) + "." + std::to_string(o.start); }

std::optional<TemporariesOwner> parse_owner_record_name(const std::string& name) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return std::nullopt;
  TemporariesOwner o;
  const char* end = name.data() + name.size();
  auto [p1, e1] = std::from_chars(name.data(), name.data() + dot, o.pid);
  auto [p2, e2] = std::from_chars(name.data() + dot + 1, end, o.start);
  if (e1 != std::errc() || e2 != std::errc() || p1 != name.data() + dot || p2 != end || o.pid <= 0)
    return std::nullopt;
  return o;
}

// The records folder when it is ours alone (a folder, not a link, owned by us, writable by
// nobody else: the records say what to delete); made when `create`.
std::optional<fs::path> usable_records_folder(bool create) {
  const fs::path dir = temporaries_records_folder();
  if (create) ::mkdir(dir.c_str(), 0700);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
    return std::nullopt;
  return dir;
}

struct OwnerRecord {
  fs::path file;
  TemporariesOwner owner;
  bool live = true;
  std::vector<fs::path> paths;
};

// A record's owner and paths; nullopt when it is not a record of our pid space.
std::optional<OwnerRecord> read_owner_record(const fs::path& file, const std::string& space_line) {
  const auto owner = parse_owner_record_name(file.filename().string());
  if (!owner) return std::nullopt;
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line) || line != space_line) return std::nullopt;
  OwnerRecord r{file, *owner, owner_alive(*owner), {}};
  while (std::getline(in, line))
    if (!line.empty()) r.paths.emplace_back(line);
  return r;
}

// What kind of staging path `name` is when it carries `pid` (staging.h), else nullopt.
std::optional<StagingKind> staging_kind_carrying(const std::string& name, pid_t pid) {
  for (StagingKind kind : {StagingKind::File, StagingKind::Folder}) {
    const size_t at = name.rfind(kind == StagingKind::Folder ? ".tmp-" : ".tmp.");
    if (at == std::string::npos || at == 0) continue;
    if (staging_pid(name, std::string_view(name).substr(0, at), kind) == pid) return kind;
  }
  return std::nullopt;
}

// This process's record; never destroyed (used from an atexit handler and the interrupt
// thread).
struct OwnRecordState {
  std::mutex mutex;
  pid_t pid = 0;  // the process the record below belongs to (a forked child makes its own)
  fs::path file;  // empty when none could be made
};

OwnRecordState& own_record_state() {
  static OwnRecordState* r = new OwnRecordState;
  return *r;
}

bool append_record_line(const fs::path& file, const std::string& line, int extra_flags) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | extra_flags, 0600);
  if (fd < 0) return false;
  const std::string text = line + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Opens this process's record (a header line naming the pid space) on first use.
const fs::path& open_own_record(OwnRecordState& r) {
  if (r.pid == ::getpid()) return r.file;
  r.pid = ::getpid();
  r.file.clear();
  const auto dir = usable_records_folder(true);
  if (!dir) return r.file;
  const TemporariesOwner self{::getpid(), start_ticks(::getpid())};
  const fs::path file = *dir / owner_record_name(self);
  if (!append_record_line(file, pid_space_line(), O_TRUNC)) return r.file;
  r.file = file;
  static bool at_exit = std::atexit(drop_own_temporaries_record) == 0;
  (void)at_exit;
  return r.file;
}

}  // namespace

fs::path temporaries_records_folder() {
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return tmp / ("fsq-owners-" + std::to_string(::geteuid()));
}

void record_temporary(const fs::path& path) {
  std::error_code ec;
  const std::string line = fs::absolute(path, ec).lexically_normal().string();
  if (ec || line.find('\n') != std::string::npos) return;  // one path per line
  OwnRecordState& r = own_record_state();
  std::lock_guard lock(r.mutex);
  const fs::path& file = open_own_record(r);
  if (!file.empty()) append_record_line(file, line, 0);
}

int sweep_stale_temporaries() {
  const auto dir = usable_records_folder(false);
  if (!dir) return 0;
  const std::string space_line = pid_space_line();
  std::vector<OwnerRecord> records;
  std::error_code ec;
  for (fs::directory_iterator it(*dir, ec), end; !ec && it != end; it.increment(ec))
    if (auto r = read_owner_record(it->path(), space_line)) records.push_back(std::move(*r));
  // A dead owner's path that a live owner lists too belongs to a new process with its pid.
  std::set<fs::path> live_paths;
  for (const OwnerRecord& r : records)
    if (r.live) live_paths.insert(r.paths.begin(), r.paths.end());
  int removed = 0;
  for (const OwnerRecord& r : records) {
    if (r.live) continue;
    for (const fs::path& p : r.paths) {
      const auto kind = staging_kind_carrying(p.filename().string(), r.owner.pid);
      if (!kind || live_paths.count(p)) continue;
      const fs::file_status st = fs::symlink_status(p, ec);
      if (*kind == StagingKind::File ? !fs::is_regular_file(st) : !fs::is_directory(st)) continue;
      std::error_code rm;
      removed += fs::remove_all(p, rm) > 0 && !rm;
    }
    fs::remove(r.file, ec);
  }
  return removed;
}

void drop_own_temporaries_record() {
  OwnRecordState& r = own_record_state();
  std::lock_guard lock(r.mutex);
  if (r.pid != ::getpid() || r.file.empty()) return;
  std::ifstream in(r.file);
  std::string line;
  std::getline(in, line);  // the pid space
  std::error_code ec;
  while (std::getline(in, line))
    if (!line.empty() && fs::exists(fs::symlink_status(line, ec))) return;  // left for the next sweep
  fs::remove(r.file, ec);
  r.file.clear();
}

}  // namespace fsq
