// Running the fsq binary from tests (fixture paths and FSQ_REQUIRE_STORIES260K: fixtures.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "temp_dir.h"

// Skips a test that runs llama.cpp's tools unless FSQ_LLAMA_CPP_BIN names their folder.
#define FSQ_REQUIRE_LLAMA_CPP()                                                                           \
  do {                                                                                                    \
    if (std::getenv("FSQ_LLAMA_CPP_BIN") == nullptr)                                                      \
      GTEST_SKIP() << "FSQ_LLAMA_CPP_BIN is not set: run scripts/llama-cpp.sh and point it at the folder " \
                      "it prints (scripts/test.sh does under CI)";                                        \
  } while (0)

namespace fsq::clitest {

struct RunResult {
  int exit_code = -1;  // -1 when the process did not exit normally (crash, signal)
  std::string out;
  std::string err;
};

// Runs FSQ_BINARY with `args` (shell-quoted), capturing stdout and stderr.
RunResult run_fsq(const std::vector<std::string>& args);

// Starts FSQ_BINARY with `args` in the background, stdout and stderr to the given files
// (stdin /dev/null). Returns its pid, or -1 when it could not be started.
pid_t spawn_fsq(const std::vector<std::string>& args, const std::filesystem::path& out,
                const std::filesystem::path& err);
// The wait status of `pid` once it exits; nullopt when it is still running after `limit`.
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit);
// SIGKILLs and reaps a spawned child that is still running when this goes out of scope, so
// that a test failing between spawn_fsq and the child's exit leaves no fsq behind it (still
// writing into a scratch folder being removed). A child already reaped is left alone.
class KillIfRunning {
 public:
  explicit KillIfRunning(pid_t pid) : pid_(pid) {}
  ~KillIfRunning();
  KillIfRunning(const KillIfRunning&) = delete;
  KillIfRunning& operator=(const KillIfRunning&) = delete;

 private:
  pid_t pid_;
};
// True when `pid` catches SIGINT and SIGTERM: fsq's interrupt handling is in place, so a
// signal sent now is handled, not fatal (see tools/fsq/interrupt.h).
bool catches_interrupts(pid_t pid);
// Every path below `dir` whose name holds ".tmp" (staging left behind), one per line.
std::string staging_paths_below(const std::filesystem::path& dir);
// Decoder layers of stories260K, and the per-layer files (layer_*.safetensors) an
// interrupted quantize has saved in its `partial` folder so far.
inline constexpr int kStoriesLayers = 5;
int saved_layer_files(const std::filesystem::path& partial);

using testing::make_temp_dir_caller_removes;
using testing::TempDir;
using testing::stories260k_dir;
using testing::tinystories_val;
using testing::wikitext_test;

// Copies the stories260K config/tokenizer files (not the weights) into `dir`.
void copy_model_side_files(const std::filesystem::path& dir);
nlohmann::json read_json(const std::filesystem::path& p);
// Number of '\n' in s.
size_t lines(const std::string& s);
// Runs a shell command line (a tool outside fsq, e.g. llama.cpp's); returns its exit status
// (-1 when it did not exit normally) and its stdout + stderr.
std::pair<int, std::string> shell(const std::string& cmd);

// The quantize memory plan must never under-predict and stay useful as a limit: for the
// `fsq quantize --json` summary, measured peak RSS <= predicted <= kPlanMaxOverPrediction x measured.
// SmolLM2's calibrated runs measure 464-521 MiB against a 615 MiB plan (1.18-1.33x): the plan's
// calibration working set (128 MiB) is sized for what glibc keeps on small models (stories260K,
// below), which SmolLM2 does not use, and a constant cannot fit both while never
// under-predicting. Before the source was streamed, its 540 MB of pages hid this in the total.
// At 7B (docs/scale.md) the plan is 1.12x.
constexpr double kPlanMaxOverPrediction = 1.35;
// stories260K (1 MB of weights) peaks at the runtime plus whatever glibc keeps of freed
// activations: the same AWQ w4 command measured 289, 308, 357 and 389 MiB across builds that
// changed unrelated code (its dynamic mmap threshold; quantize now trims after each layer).
// Over a small model the plan can only be a loose bound; SmolLM2 keeps the tight one.
constexpr double kTinyModelPlanMaxOverPrediction = 1.5;
void expect_plan_brackets_peak_rss(const std::filesystem::path& quantize_json,
                                   double max_over_prediction = kPlanMaxOverPrediction);

// What `fsq eval --compare` says of a quantized stories260K against the original.
struct Quality {
  double ppl = 0, kl = 0, top1 = 0;
};
// Protocol bos-window, the first 32 windows of 256 tokens of tinystories_val.txt, one thread;
// the report is written beside the model (<model>.eval.json).
Quality evaluate_against_stories260k(const std::filesystem::path& model);

// Mean KL(SmolLM2 || model) by `fsq eval --compare` on the first 2 windows of 1024 tokens of
// `text` (protocol gptq, one thread); the report goes to `json`. The reference's logits are
// kept in a folder of the build tree that every test process shares (--reference-cache): the
// SmolLM2 tests compare about 18 checkpoints with one reference on the same windows, and its
// forward was half of each comparison (15 of 30 s).
double smollm2_kl(const std::filesystem::path& model, const std::filesystem::path& text,
                  const std::filesystem::path& json);

// Quantizes the SmolLM2 fixture into dir / name with `options` (one thread; the plan must
// bracket the measured peak) and returns smollm2_kl on TinyStories.
double smollm2_quantized_kl(const std::filesystem::path& dir, const std::string& name,
                            const std::vector<std::string>& options);

}  // namespace fsq::clitest
