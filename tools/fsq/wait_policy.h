// Idle worker threads that spin only briefly, then sleep. ATen's OpenMP pool and OpenBLAS's
// own pthreads both busy-wait between jobs by default; with as many threads as cores the two
// pools steal each other's cores (perf on a SmolLM2 window: ~40 % of the time in libgomp
// spinning and OpenBLAS's sched_yield loop). Sleeping at once (OMP_WAIT_POLICY=PASSIVE, what
// fsq used first) fixed that but made every OpenMP region of a decode step a futex wake-up:
// the fast decode path runs ~200 small regions per token, and W4 decode on 2 threads ran at
// 65 tok/s against 99 on 1. A short spin (GOMP_SPINCOUNT=3000) keeps workers awake between
// the regions of one step and asleep during BLAS work: SmolLM2 W4 decode on 2 threads 65 ->
// ~170 tok/s, prefill and 2048-token eval windows unchanged. Both libraries read their
// settings from the environment once, when they are loaded, before main() runs, so fsq sets
// them and re-executes itself once. Settings the user made are kept; a user's
// OMP_WAIT_POLICY also keeps fsq from setting GOMP_SPINCOUNT, which would override it.
#pragma once

#include <string>

namespace fsq::cli {

// The settings fsq wants (GOMP_SPINCOUNT=3000: a few microseconds of spinning before an OpenMP
// worker sleeps; OPENBLAS_THREAD_TIMEOUT=4: about 16 cycles before an OpenBLAS worker sleeps).
inline constexpr const char* kWaitEnv[][2] = {{"GOMP_SPINCOUNT", "3000"}, {"OPENBLAS_THREAD_TIMEOUT", "4"}};

// Sets what is missing of kWaitEnv and execs /proc/self/exe with the same arguments; returns
// (without exec) when nothing was missing, when this process is already the re-exec, or when
// exec fails (fsq then runs with the libraries' defaults).
void ensure_short_waits(char** argv);

// OMP_WAIT_POLICY and the kWaitEnv variables as this process sees them, "NAME=value" joined
// by spaces ("NAME unset" for a missing one): stamped into reports next to the thread count.
std::string thread_wait_settings();

}  // namespace fsq::cli
