// SIGINT / SIGTERM in the fsq binary: remove this process's staging files, keep
// "<out>.partial" (a quantize run resumes from it), print one line, exit 128 + signal.
#pragma once

namespace fsq::cli {

// Call first in main. Installs the handlers and starts the thread that acts on them.
void install_interrupt_handling();

// What the interrupt line tells the user after "fsq: interrupted; ". Default: "nothing was
// written". `hint` must outlive the process (a string literal).
void set_interrupt_hint(const char* hint);

}  // namespace fsq::cli
