// Measured latencies that replace the roofline defaults (LLM-PQ's profiler): `fsq profile`
// times one decoder layer and the head of a model on a device at each weight width over a
// grid of micro-batch sizes and lengths, and fits a small linear regression per width and
// phase; `fsq plan --profile` then predicts a stage's layers from the fit instead of from
// datasheet rates. A profile belongs to one model shape: the fit's terms are counts of
// tokens, not FLOPs, so it does not carry over to another hidden size.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/cost_model.h"
#include "plan/model_spec.h"

namespace fsq::plan {

enum class Phase { kPrefill, kDecode };

// One timing. Prefill: `batch` sequences of `tokens` new positions (nothing cached), logits of
// the last position. Decode: one step of `batch` sequences over `context` cached positions.
// bits 0: the head (final norm and lm_head), which has no width in the plan.
struct ProfileSample {
  Phase phase = Phase::kPrefill;
  int bits = 0;
  int64_t batch = 1;
  int64_t tokens = 1;
  int64_t context = 0;
  double seconds = 0;  // one layer (or the head)
};

// seconds = coef . features, least squares on relative error (every sample counts alike,
// whether it took 50 us or 50 ms).
// Layer prefill: {1, batch * tokens, batch * tokens^2} (fixed cost, linears and the
// per-token work, attention over the causal square). Layer decode: {1, batch, batch *
// context} (the weights read once per step, per-sequence work, the KV cache read).
// Head: {1, batch} in both phases (one position per sequence).
struct LatencyFit {
  std::array<double, 3> coef{};
  int points = 0;
  double r2 = 0;                 // of the fit on the samples, in seconds
  double max_rel_residual = 0;   // max |fit - measured| / measured
  double floor_seconds = 0;      // the fastest sample: predictions never go below it
};

std::array<double, 3> fit_features(Phase phase, bool head, int64_t batch, int64_t tokens, int64_t context);
double predict_seconds(const LatencyFit& fit, const std::array<double, 3>& features);
// Throws fsq::Error (naming `what`) when the samples do not determine the terms (fewer
// than 3 distinct feature rows) or a time is not positive.
LatencyFit fit_latency(const std::vector<ProfileSample>& samples, Phase phase, int bits, const std::string& what);

struct LatencyProfile {
  std::string device;       // the device type (GPU table name) the profile stands for
  double memory_gib = 0;    // the measuring machine's memory: the device's capacity when
                            // the GPU table does not know `device` (e.g. "cpu")
  std::string measured_on;  // free text: runtime, threads, ISA, date
  std::string model_name;
  int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, vocab = 0;
  std::vector<int> widths;
  std::map<int, LatencyFit> prefill, decode;  // by width
  LatencyFit head_prefill, head_decode;
  std::vector<ProfileSample> samples;
  std::string source;  // the file it was read from (errors and reports)
};

// Fits every width and the head from `p.samples` (in place).
void fit_profile(LatencyProfile& p);

// One layer at `bits` and the head for the workload's micro-batch sizes, as the roofline's
// layer_seconds() / head_seconds() define them (decode at the mean context of the
// generation). Throws fsq::Error when the profile has no width `bits`.
PhaseSeconds profile_layer_seconds(const LatencyProfile& p, const Workload& w, int bits);
PhaseSeconds profile_head_seconds(const LatencyProfile& p, const Workload& w);

// Throws fsq::Error naming the profile's file unless it was measured on a model of this
// shape (hidden, ffn, heads, kv heads, vocab) and has every width in `widths`.
void check_profile_fits(const LatencyProfile& p, const ModelSpec& m, const std::vector<int>& widths);

nlohmann::json profile_to_json(const LatencyProfile& p);
// Validates everything (names `source` in errors) and refits from the samples, so a file's
// stored coefficients are only a record.
LatencyProfile profile_from_json(const nlohmann::json& j, const std::string& source);
LatencyProfile load_profile(const std::filesystem::path& path);

}  // namespace fsq::plan
