// Temporaries that a dead fsq process left behind. A run removes its staging files and
// folders when it ends, and on SIGINT/SIGTERM (staging.h); SIGKILL, a crash or the OOM
// killer leave them: "<out>.tmp.<pid>.<n>", "<out>.tmp-<pid>" beside any output, and fsq
// profile's scratch folder in the temp folder. sweep_stale_staging (staging.h) finds the
// first two only when a later run writes the same output, so each process also notes every
// temporary it makes in its owner record, "<temp folder>/fsq-owners-<uid>/<pid>.<start>",
// and the next fsq run, whatever it writes, removes what the records of dead owners list.
//
// An owner is dead when no process has its pid (kill(pid, 0) fails with ESRCH), or when the
// process with that pid started at another time (/proc/<pid>/stat): the pid was reused.
#pragma once

#include <filesystem>

namespace fsq {

// Notes `path`, a staging name that carries this process's pid (staging.h), in this
// process's owner record (made on first use). Call it before creating the path, so that a
// kill between the two leaves nothing unnoted. Best effort: when the records folder cannot
// be used (not ours, not writable), nothing is noted.
void record_temporary(const std::filesystem::path& path);

// Removes every path that the records of dead owners list, then those records. Never
// removes a path that a live owner's record lists, a path whose name does not carry its
// owner's pid, or anything of a record made under another boot or pid namespace (pids
// there cannot be checked from here). Best effort; returns how many paths it removed.
int sweep_stale_temporaries();

// Removes this process's owner record when none of the paths it lists exists any more;
// otherwise leaves it for the next sweep. Runs at exit by itself; the interrupt handler,
// which leaves by _exit, calls it after its own cleanup.
void drop_own_temporaries_record();

// "<temp folder>/fsq-owners-<uid>", the folder of the owner records.
std::filesystem::path temporaries_records_folder();

}  // namespace fsq
