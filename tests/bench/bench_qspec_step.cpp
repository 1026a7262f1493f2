// QSpec's step costs on the CPU (issue 59): one packed model, one single-token decode step at
// the same position, timed as the verifier runs it (W4A16: f32 activations; W4A8: int8 per 32
// columns, fsq's default decode) and as the QSpec draft runs it (W4A4: 4-bit per token,
// runtime/activation_mode.h), plus the verify pass of gamma + 1 rows. Median of rounds, the
// modes interleaved in each round so that machine noise hits all of them alike; prints the
// draft/verify ratios measured in this run.
//   build/tests/bench/bench_qspec_step MODEL_DIR [--threads 1] [--steps 20] [--rounds 7] [--gamma 4]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/activation_mode.h"
#include "runtime/model_files.h"
#include "runtime/speculative/qspec_proposer.h"
#include "runtime/threads.h"

namespace {

using fsq::KVCache;
using fsq::LlamaModel;

constexpr int64_t kPrompt = 64;  // positions before the timed steps (a short context)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of `rows` positions at the cache end (the cache put back after each).
double time_steps(const LlamaModel& m, KVCache& cache, int64_t rows, int steps, bool draft) {
  std::vector<int64_t> ids(static_cast<size_t>(rows), 42);
  std::vector<float> logits(static_cast<size_t>(rows * m.config().vocab_size));
  const fsq::ScopedDecodeActivations mode(draft ? fsq::DecodeActivations::Int4PerToken : fsq::DecodeActivations::AsSet);
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    if (!m.forward_positions(ids.data(), rows, cache, logits.data())) {
      std::fprintf(stderr, "the model is not on the fast decode path: %s\n", m.fast_decode_unavailable().c_str());
      std::exit(1);
    }
    cache.length -= rows;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}

KVCache prefilled(const LlamaModel& m) {
  KVCache cache = m.new_cache(1, kPrompt + 16);
  std::vector<int64_t> ids(8);
  std::vector<float> logits(static_cast<size_t>(8 * m.config().vocab_size));
  for (int64_t p = 0; p < kPrompt; p += 8) {
    for (int64_t i = 0; i < 8; ++i) ids[static_cast<size_t>(i)] = (p + i) * 37 % m.config().vocab_size;
    m.forward_positions(ids.data(), 8, cache, logits.data());
  }
  return cache;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [--threads N] [--steps S] [--rounds R] [--gamma K]\n", argv[0]);
    return 2;
  }
  int threads = 1, steps = 20, rounds = 7, gamma = 4;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--threads") threads = v;
    else if (k == "--steps") steps = v;
    else if (k == "--rounds") rounds = v;
    else if (k == "--gamma") gamma = v;
  }
  fsq::set_threads(threads);
  const fsq::ModelFiles files = fsq::ModelFiles::open(argv[1]);
  fsq::RuntimeOptions f32, int8;
  f32.int8_decode_activations = false;
  int8.int8_decode_activations = true;
  const auto a16 = files.load(f32), a8 = files.load(int8);
  const int64_t marked = fsq::speculative::mark_qspec_draft_linears(*a16);
  fsq::speculative::mark_qspec_draft_linears(*a8);
  KVCache c16 = prefilled(*a16), c8 = prefilled(*a8);
  std::vector<double> w4a16, w4a8, w4a4, w4a4_on_a8, verify16, verify8;
  time_steps(*a16, c16, 1, 3, false);  // warm up
  for (int r = 0; r < rounds; ++r) {
    w4a16.push_back(time_steps(*a16, c16, 1, steps, false));
    w4a8.push_back(time_steps(*a8, c8, 1, steps, false));
    w4a4.push_back(time_steps(*a16, c16, 1, steps, true));
    w4a4_on_a8.push_back(time_steps(*a8, c8, 1, steps, true));
    verify16.push_back(time_steps(*a16, c16, gamma + 1, steps, false));
    verify8.push_back(time_steps(*a8, c8, gamma + 1, steps, false));
  }
  const double d = median(w4a4), v16 = median(w4a16), v8 = median(w4a8), p16 = median(verify16), p8 = median(verify8);
  std::printf("model %s, %d thread(s), context %lld, %d steps x %d rounds (median), %lld linears on 4-bit "
              "activations in the draft\n", argv[1], threads, static_cast<long long>(kPrompt), steps, rounds,
              static_cast<long long>(marked));
  const double d8 = median(w4a4_on_a8);
  std::printf("  verify W4A16 step (f32 activations)     %8.3f ms\n", 1e3 * v16);
  std::printf("  draft on it (q/k/v, gate/up W4A4)       %8.3f ms   draft/verify %.3f\n", 1e3 * d, d / v16);
  std::printf("  verify W4A8 step (int8 per 32, default) %8.3f ms\n", 1e3 * v8);
  std::printf("  draft on it (q/k/v, gate/up W4A4)       %8.3f ms   draft/verify %.3f\n", 1e3 * d8, d8 / v8);
  std::printf("  verify pass W4A16, %d rows               %8.3f ms   (%.2f single steps)\n", gamma + 1, 1e3 * p16,
              p16 / v16);
  std::printf("  verify pass W4A8, %d rows                %8.3f ms   (%.2f single steps)\n", gamma + 1, 1e3 * p8,
              p8 / v8);
  std::printf("{\"threads\": %d, \"draft_on_w4a8_ms\": %.4f, \"draft_w4a4_ms\": %.4f, \"verify_w4a16_ms\": %.4f, \"verify_w4a8_ms\": %.4f, "
              "\"verify_pass_w4a16_ms\": %.4f, \"verify_pass_w4a8_ms\": %.4f, \"gamma\": %d}\n",
              threads, 1e3 * d8, 1e3 * d, 1e3 * v16, 1e3 * v8, 1e3 * p16, 1e3 * p8, gamma);
  return 0;
}
