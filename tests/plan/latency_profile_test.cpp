// The measured-latency profile: its least-squares fit, its file format and checks, and the
// planner taking a profiled device's times from it instead of the roofline.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "plan/cluster.h"
#include "plan/latency_profile.h"
#include "plan/plan_problem.h"

namespace fsq::plan {
namespace {

// Times generated exactly from known coefficients: the fit must return them. Solving a
// 3-term least-squares problem with column scaling loses a few ulps times the condition
// number of the scaled matrix (< 1e3 here): 1e-9 relative is far above that and far below
// any real mistake.
constexpr double kFitRelTol = 1e-9;

const std::array<double, 3> kPrefillTruth = {2e-3, 25e-6, 0.14e-6};
const std::array<double, 3> kDecodeTruth = {150e-6, 40e-6, 0.3e-6};
const std::array<double, 3> kHeadTruth = {5e-3, 2.5e-3, 0};

double truth(const std::array<double, 3>& c, const std::array<double, 3>& x) { return c[0] * x[0] + c[1] * x[1] + c[2] * x[2]; }

LatencyProfile synthetic_profile(const std::vector<int>& widths) {
  LatencyProfile p;
  p.device = "cpu";
  p.memory_gib = 24;
  p.model_name = "llama";
  p.hidden = 576, p.ffn = 1536, p.heads = 9, p.kv_heads = 3, p.vocab = 49152;
  p.widths = widths;
  p.source = "cpu.json";
  for (int b : widths) {
    const double slow = b == 16 ? 4.0 : 1.0;  // 16-bit layers read four times the bytes
    for (int64_t batch : {1, 2})
      for (int64_t len : {32, 64, 128, 256})
        p.samples.push_back({Phase::kPrefill, b, batch, len, 0,
                             slow * truth(kPrefillTruth, fit_features(Phase::kPrefill, false, batch, len, 0))});
    for (int64_t batch : {1, 2, 4, 8})
      for (int64_t ctx : {36, 132, 516})
        p.samples.push_back({Phase::kDecode, b, batch, 1, ctx,
                             slow * truth(kDecodeTruth, fit_features(Phase::kDecode, false, batch, 1, ctx))});
  }
  for (int64_t batch : {1, 2, 4, 8}) {
    p.samples.push_back({Phase::kPrefill, 0, batch, 1, 0, truth(kHeadTruth, fit_features(Phase::kPrefill, true, batch, 1, 0))});
    p.samples.push_back({Phase::kDecode, 0, batch, 1, 0, truth(kHeadTruth, fit_features(Phase::kDecode, true, batch, 1, 0))});
  }
  fit_profile(p);
  return p;
}

void expect_coefficients(const LatencyFit& fit, const std::array<double, 3>& want, double scale) {
  for (int k = 0; k < 3; ++k) {
    if (want[k] == 0)
      EXPECT_EQ(fit.coef[k], 0.0) << "term " << k;
    else
      EXPECT_NEAR(fit.coef[k], scale * want[k], kFitRelTol * scale * std::abs(want[k])) << "term " << k;
  }
}

TEST(LatencyProfile, FitRecoversTheCoefficientsOfExactTimes) {
  LatencyProfile p = synthetic_profile({4, 16});
  expect_coefficients(p.prefill.at(4), kPrefillTruth, 1.0);
  expect_coefficients(p.decode.at(4), kDecodeTruth, 1.0);
  expect_coefficients(p.prefill.at(16), kPrefillTruth, 4.0);
  expect_coefficients(p.decode.at(16), kDecodeTruth, 4.0);
  expect_coefficients(p.head_decode, kHeadTruth, 1.0);
  EXPECT_GT(p.decode.at(4).r2, 1 - 1e-9);
  EXPECT_LT(p.decode.at(4).max_rel_residual, 1e-9);
  EXPECT_EQ(p.prefill.at(4).points, 8);
  EXPECT_EQ(p.decode.at(4).points, 12);
}

TEST(LatencyProfile, PredictsTheWorkloadAndNeverBelowTheFastestSample) {
  LatencyProfile p = synthetic_profile({4});
  Workload w;
  w.prompt_len = 200, w.new_tokens = 100, w.prefill_microbatch = 2, w.decode_microbatch = 4;
  PhaseSeconds t = profile_layer_seconds(p, w, 4);
  EXPECT_NEAR(t.prefill, truth(kPrefillTruth, {1, 2 * 200.0, 2 * 200.0 * 200.0}), 1e-9 * t.prefill);
  // Decode at the roofline's mean context: prompt + new_tokens / 2.
  EXPECT_NEAR(t.decode, truth(kDecodeTruth, {1, 4, 4 * 250.0}), 1e-9 * t.decode);
  PhaseSeconds h = profile_head_seconds(p, w);
  EXPECT_NEAR(h.decode, truth(kHeadTruth, {1, 4, 0}), 1e-9 * h.decode);
  // A fit whose line dips below the data is held at the fastest measured time.
  LatencyFit dipping;
  dipping.coef = {-1.0, 0, 0};
  dipping.floor_seconds = 3e-4;
  EXPECT_EQ(predict_seconds(dipping, {1, 1, 1}), 3e-4);
  EXPECT_THROW(profile_layer_seconds(p, w, 3), Error);
}

TEST(LatencyProfile, TooFewShapesOrABadTimeIsAnError) {
  std::vector<ProfileSample> s = {{Phase::kDecode, 4, 1, 1, 64, 1e-4}, {Phase::kDecode, 4, 2, 1, 64, 2e-4},
                                  {Phase::kDecode, 4, 2, 1, 64, 2.1e-4}};
  try {
    fit_latency(s, Phase::kDecode, 4, "cpu.json");
    FAIL() << "two distinct shapes fitted three terms";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 distinct decode shapes for 4-bit layers"), std::string::npos) << e.what();
  }
  s.push_back({Phase::kDecode, 4, 4, 1, 512, 0.0});
  EXPECT_THROW(fit_latency(s, Phase::kDecode, 4, "cpu.json"), Error);
}

TEST(LatencyProfile, FileRoundTripRefitsTheSameCoefficients) {
  LatencyProfile p = synthetic_profile({3, 4, 8, 16});
  LatencyProfile q = profile_from_json(profile_to_json(p), "cpu.json");
  EXPECT_EQ(q.device, "cpu");
  EXPECT_EQ(q.widths, p.widths);
  EXPECT_EQ(q.samples.size(), p.samples.size());
  for (int b : p.widths) {
    EXPECT_EQ(q.prefill.at(b).coef, p.prefill.at(b).coef) << b;
    EXPECT_EQ(q.decode.at(b).coef, p.decode.at(b).coef) << b;
  }
  EXPECT_EQ(q.head_prefill.coef, p.head_prefill.coef);
}

std::string load_error(nlohmann::json j) {
  try {
    profile_from_json(j, "cpu.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LatencyProfile, MalformedFilesGetOneClearError) {
  const nlohmann::json good = profile_to_json(synthetic_profile({4}));
  EXPECT_EQ(load_error(good), "");
  nlohmann::json j = good;
  j["kind"] = "bit assignment";
  EXPECT_NE(load_error(j).find("cpu.json: not a latency profile"), std::string::npos) << load_error(j);
  j = good;
  j["samples"][0]["bits"] = 3;
  EXPECT_NE(load_error(j).find("samples[0]"), std::string::npos) << load_error(j);
  j = good;
  j["samples"][1]["seconds"] = -1.0;
  EXPECT_NE(load_error(j).find("must be positive"), std::string::npos) << load_error(j);
  j = good;
  j["model"].erase("hidden");
  EXPECT_NE(load_error(j).find("'hidden'"), std::string::npos) << load_error(j);
  j = good;
  j["widths"] = {5};
  EXPECT_NE(load_error(j).find("3, 4, 8 or 16"), std::string::npos) << load_error(j);
}

TEST(LatencyProfile, ProfileOfAnotherShapeOrWithoutAWidthIsRefused) {
  LatencyProfile p = synthetic_profile({4, 16});
  ModelSpec m;
  m.name = "llama";
  m.hidden = 576, m.ffn = 1536, m.heads = 9, m.kv_heads = 3, m.vocab = 49152;
  EXPECT_NO_THROW(check_profile_fits(p, m, {4, 16}));
  try {
    check_profile_fits(p, m, {3, 4, 16});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.json: no 3-bit layers"), std::string::npos) << e.what();
  }
  m.hidden = 4096;
  try {
    check_profile_fits(p, m, {4});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.json: measured on llama (hidden 576"), std::string::npos) << e.what();
  }
}

TEST(LatencyProfile, PlannerTakesAProfiledDevicesTimesFromTheProfile) {
  LatencyProfile p = synthetic_profile({4, 16});
  std::vector<LatencyProfile> profiles = {p};
  GpuSpecTable gpus = GpuSpecTable::builtin();
  gpus.add_if_unknown(GpuSpec{"cpu", 24, 0, 0, 0});
  ModelSpec m = model_preset("llama-2-7b");
  m.hidden = 576, m.ffn = 1536, m.heads = 9, m.kv_heads = 3, m.vocab = 49152, m.layers = 6;
  Cluster c = cluster_from_json({{"devices", {{{"type", "CPU"}, {"node", "a"}}, {{"type", "T4-16G"}, {"node", "a"}}}}}, gpus,
                                "cluster.json");
  ProblemInputs in;
  in.model = &m;
  in.workload.prompt_len = 128, in.workload.new_tokens = 20, in.workload.batch = 4;
  in.workload.prefill_microbatch = 2, in.workload.decode_microbatch = 4;
  in.order = c.devices;
  in.cluster = &c;
  in.widths = {4, 16};
  in.layer_omega.assign(6, {1.0, 0.0});
  in.group_size = 2;
  in.profiles = &profiles;
  PlanProblem prob = build_problem(in);
  for (int w = 0; w < 2; ++w) {
    const PhaseSeconds want = profile_layer_seconds(p, in.workload, in.widths[w]);
    EXPECT_DOUBLE_EQ(prob.prefill_s[prob.at(0, 0, w)], 2 * want.prefill) << "width " << in.widths[w];
    EXPECT_DOUBLE_EQ(prob.decode_s[prob.at(0, 0, w)], 2 * want.decode) << "width " << in.widths[w];
    // The T4 stage keeps the roofline.
    const PhaseSeconds roof = layer_seconds(m, in.workload, c.devices[1].spec, in.widths[w], in.efficiency);
    EXPECT_DOUBLE_EQ(prob.decode_s[prob.at(0, 1, w)], 2 * roof.decode);
  }
  // The head on a profiled last stage: the profile's head time, no transfer after it.
  in.order = {c.devices[1], c.devices[0]};
  PlanProblem last = build_problem(in);
  EXPECT_DOUBLE_EQ(last.stage[1].decode_s, profile_head_seconds(p, in.workload).decode);
  EXPECT_DOUBLE_EQ(last.stage[1].prefill_s, profile_head_seconds(p, in.workload).prefill);
  // Without profiles the CPU (no datasheet rates) is not timed from the profile.
  EXPECT_EQ(find_profile(nullptr, "cpu"), nullptr);
  EXPECT_EQ(find_profile(&profiles, "CPU"), &profiles[0]);
}

}  // namespace
}  // namespace fsq::plan
