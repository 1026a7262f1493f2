// fsq: one binary, one subcommand per cmd_<name>.cpp. Library errors become one line on
// stderr and exit code 1; command-line usage errors exit with 2.
#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "allocator.h"
#include "common/error.h"
#include "common/stale_temporaries.h"
#include "interrupt.h"
#include "options.h"
#include "provenance.h"
#include "wait_policy.h"

namespace {

int fail(int code, std::string msg) {
  // Keep the promise of one line even for multi-line messages (LibTorch's c10::Error).
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "fsq: error: %s\n", msg.c_str());
  return code;
}

// What to do when memory runs out, for every command (eval --batch-size, calibrate and
// quantize --batch-size/--samples/--seq-len size the largest buffers).
constexpr const char* kOutOfMemory =
    "out of memory: lower --batch-size (or --samples / --seq-len / --max-windows), or use a machine with more memory";

// LibTorch's raw messages the user can act on, as one line naming the option: its CPU kernels
// lack f16 matrix multiplies ("addmm_impl_cpu_" not implemented for 'Half'), and its allocator's
// "DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes".
std::string explain_libtorch(std::string msg) {
  if (msg.find("not implemented for 'Half'") != std::string::npos)
    return "--dtype f16: LibTorch's CPU kernels have no f16 for this operation (" + msg.substr(0, 80) +
           "); use --dtype bf16 or f32 on the CPU";
  if (msg.find("can't allocate memory") != std::string::npos || msg.find("out of memory") != std::string::npos) {
    const size_t tried = msg.find("you tried to allocate");
    // "(you tried to allocate N bytes)", without the errno text that follows in the message.
    const size_t bytes = tried == std::string::npos ? tried : msg.find(" bytes", tried);
    return std::string(kOutOfMemory) +
           (bytes == std::string::npos ? "" : " (" + msg.substr(tried, bytes + 6 - tried) + ")");
  }
  return msg;
}

}  // namespace

int main(int argc, char** argv) {
  fsq::cli::ensure_short_waits(argv);  // may re-execute fsq: before anything else
  fsq::cli::keep_working_buffers_in_heap();
  fsq::cli::install_interrupt_handling();  // first: Ctrl-C during the load is handled too
  fsq::cli::record_invocation(argc, argv);
  CLI::App app{"fsq: LLM compression toolchain (calibrate, quantize, evaluate, inspect, generate, convert, plan, profile)", "fsq"};
  app.set_version_flag("--version", fsq::cli::version_line());
  app.require_subcommand(1);
  app.footer(fsq::cli::examples({"fsq eval --model DIR --data wiki.test.raw", "fsq inspect DIR",
                                 "fsq calibrate --model DIR --data calib.txt --out calib.safetensors",
                                 "fsq generate --model DIR --prompt \"Once upon a time\" -n 40",
                                 "fsq convert --from gguf model.gguf --out DIR",
                                 "fsq plan --preset opt-30b --cluster cluster.json"}));
  std::vector<fsq::cli::Command> commands = {fsq::cli::add_eval_command(app),
                                             fsq::cli::add_inspect_command(app),
                                             fsq::cli::add_generate_command(app),
                                             fsq::cli::add_convert_command(app),
                                             fsq::cli::add_calibrate_command(app),
                                             fsq::cli::add_export_command(app),
                                             fsq::cli::add_quantize_command(app),
                                             fsq::cli::add_plan_command(app),
                                             fsq::cli::add_profile_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return fail(2, e.what());
  }
  try {
    // What killed fsq runs left (common/stale_temporaries.h), before this run adds its own.
    fsq::sweep_stale_temporaries();
    for (auto& c : commands)
      if (c.app->parsed()) return c.run();
    return fail(2, "no subcommand given");
  } catch (const c10::Error& e) {
    return fail(1, explain_libtorch(e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    return fail(1, kOutOfMemory + std::string(" (std::bad_alloc)"));
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
}
