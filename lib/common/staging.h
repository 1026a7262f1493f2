// Staging paths: AtomicFile's "<file>.tmp.<pid>.<n>" and AtomicDir's "<folder>.tmp-<pid>".
// A registry of this process's live ones, so an interrupted run can remove them before it
// exits, and a sweep of those that processes killed mid-write left behind.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace fsq {

enum class StagingKind { File, Folder };

// The folder a staging path sits in: `p`'s parent, or "." for a bare name.
std::filesystem::path parent_folder_of(const std::filesystem::path& p);

// The staging name of `dest_name` for (pid, n): "<dest_name>.tmp.<pid>.<n>" for a file,
// "<dest_name>.tmp-<pid>" for a folder (n unused).
std::string staging_name(std::string_view dest_name, StagingKind kind, pid_t pid, unsigned n = 0);

// The pid in `name` when it is exactly a staging name of `dest_name` of that kind (decimal
// numbers without sign or leading zeros, pid > 0); nullopt for anything else.
std::optional<pid_t> staging_pid(std::string_view name, std::string_view dest_name, StagingKind kind);

// False only when no process has this pid (kill(pid, 0) fails with ESRCH); a process we
// may not signal (EPERM) exists.
bool process_exists(pid_t pid);

// Removes the staging files (kind File: regular files) or folders (kind Folder: real
// folders, with their contents) of `dest` beside it whose pid names no live process.
// Never touches this process's own, a live process's, or any other name. Best effort:
// errors are ignored (another process may be sweeping too). Returns how many it removed.
int sweep_stale_staging(const std::filesystem::path& dest, StagingKind kind);

// The registry. Each call runs `op` (which creates, renames or removes `path`) and updates
// the registry under one lock, so the interrupt cleanup never races a create or a commit.
void create_staging(const std::filesystem::path& path, const std::function<void()>& op);
void commit_staging(const std::filesystem::path& path, const std::function<void()>& op);  // op renames it away
void remove_staging(const std::filesystem::path& path, const std::function<void()>& op);  // op removes it

// For the CLI's interrupt thread, just before _exit: removes every registered staging path
// and keeps the registry locked for good, so no create or commit can follow in this process.
void remove_all_staging_for_exit();

}  // namespace fsq
