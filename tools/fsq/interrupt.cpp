// How: the handler only writes the signal number into a pipe (write(2) is async-signal-
// safe); a watcher thread blocked on the pipe's other end does the real work as ordinary
// code: it takes the staging registry's lock (so it never races a create or a commit;
// common/staging.h), removes what is registered, prints one line and _exit()s, without
// running destructors under the working threads.
// Why not the alternatives: the cleanup (removing folders, printing) is not async-signal-
// safe, so it cannot run in the handler; a flag checked at progress points would leave a
// long layer search or eval window running for minutes after Ctrl-C; and blocking the
// signals for a sigwait() thread misses threads that libraries start before main (OpenBLAS
// does, and a signal delivered to one of them would kill the process uncleaned).
#include "interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "common/stale_temporaries.h"
#include "common/staging.h"

namespace fsq::cli {
namespace {

std::atomic<const char*> g_hint{"nothing was written"};
int g_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!::write(g_pipe[1], &byte, 1);
  errno = saved_errno;
}

void watch() {
  unsigned char sig = 0;
  for (;;) {
    const ssize_t n = ::read(g_pipe[0], &sig, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    return;  // the pipe failed: leave the default behaviour of a dying process
  }
  remove_all_staging_for_exit();
  drop_own_temporaries_record();  // _exit runs no atexit handler
  // write(2), not stdio: a working thread may hold stderr's lock mid-line. On a terminal the
  // line replaces a progress bar (and the "^C" echo) instead of trailing it.
  char line[256];
  const char* clear = ::isatty(STDERR_FILENO) ? "\r\033[K" : "";
  const int n = std::snprintf(line, sizeof line, "%sfsq: interrupted; %s\n", clear, g_hint.load());
  if (n > 0) (void)!::write(STDERR_FILENO, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handling() {
  if (::pipe2(g_pipe, O_CLOEXEC) != 0) return;  // no handling: the signals keep their default action
  std::thread(watch).detach();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;  // working threads' system calls carry on until the watcher exits
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
}

void set_interrupt_hint(const char* hint) { g_hint.store(hint); }

}  // namespace fsq::cli
