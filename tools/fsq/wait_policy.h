// Idle worker threads that sleep instead of spinning. ATen's OpenMP pool and OpenBLAS's own
// pthreads both busy-wait between jobs by default; with as many threads as cores the two
// pools steal each other's cores (perf on a SmolLM2 window: ~40 % of the time in libgomp
// spinning and OpenBLAS's sched_yield loop). Both libraries read their wait settings from the
// environment once, when they are loaded, before main() runs, so fsq sets them and
// re-executes itself once. Settings the user made are kept.
#pragma once

#include <string>

namespace fsq::cli {

// The settings fsq wants (OMP_WAIT_POLICY=PASSIVE, OPENBLAS_THREAD_TIMEOUT=4: about 16 cycles
// of spinning before a worker sleeps).
inline constexpr const char* kPassiveWaitEnv[][2] = {{"OMP_WAIT_POLICY", "PASSIVE"},
                                                     {"OPENBLAS_THREAD_TIMEOUT", "4"}};

// Sets what is missing of kPassiveWaitEnv and execs /proc/self/exe with the same arguments;
// returns (without exec) when nothing was missing, when this process is already the re-exec,
// or when exec fails (fsq then runs with the libraries' defaults).
void ensure_passive_waits(char** argv);

// The kPassiveWaitEnv variables as this process sees them, "NAME=value" joined by spaces
// ("NAME unset" for a missing one): stamped into reports next to the thread count.
std::string thread_wait_settings();

}  // namespace fsq::cli
