// fsq plan's quality side on stories260K: the variance indicator from a calibration file,
// per-layer widths at 3.5 average bits, fsq quantize --plan, and the two claims: the mixed
// checkpoint beats every uniform one at <= 3.5 bits, and omega ranks the layers like their
// measured KL does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

#include "formats/packed_checkpoint.h"
#include "stories260k_quantize_suite.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

class CliPlanStories260k : public Stories260kQuantizeSuite {
 protected:
  static fs::path calibration() {
    fs::path file = dir_ / "stats.safetensors";
    if (!fs::exists(file)) {
      RunResult r = run_fsq({"calibrate", "--model", stories260k_dir().string(), "--data", (dir_ / "calib.txt").string(),
                             "--samples", "16", "--seq-len", "256", "--threads", "1", "--progress", "off", "--out",
                             file.string()});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return file;
  }
  static nlohmann::json plan(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"plan", "--model", stories260k_dir().string(), "--calib", calibration().string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_fsq(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  // `method` (quantize options) with these widths per layer (a plan file written here), then
  // its KL on the suite's evaluation windows.
  static double kl_with_widths(const std::string& name, const std::vector<int>& bits, std::vector<std::string> method) {
    fs::path plan_file = dir_ / (name + ".plan.json");
    testing::write_file(plan_file, nlohmann::json{{"plan", {{"bits_per_layer", bits}}}}.dump());
    // --head-bits 16: the widths measured are the layers', not the embedding's.
    for (const char* o : {"--plan", plan_file.c_str(), "--head-bits", "16"}) method.push_back(o);
    RunResult r = quantize(dir_ / name, method);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return evaluate_against_stories260k(dir_ / name).kl;
  }
  static double rtn_kl_with_widths(const std::string& name, const std::vector<int>& bits) {
    return kl_with_widths(name, bits, {"--method", "rtn"});
  }
  // The same with one width per linear (plan.bits_per_linear: per layer, role -> bits).
  static double kl_with_linear_widths(const std::string& name, const nlohmann::json& bits_per_linear,
                                      std::vector<std::string> method) {
    fs::path plan_file = dir_ / (name + ".plan.json");
    testing::write_file(plan_file, nlohmann::json{{"plan", {{"bits_per_linear", bits_per_linear}}}}.dump());
    for (const char* o : {"--plan", plan_file.c_str(), "--head-bits", "16"}) method.push_back(o);
    RunResult r = quantize(dir_ / name, method);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return evaluate_against_stories260k(dir_ / name).kl;
  }
  // Per-layer widths written as a per-linear plan: every linear at its layer's width.
  static nlohmann::json per_linear(const std::vector<int>& layer_bits) {
    nlohmann::json out = nlohmann::json::array();
    for (int b : layer_bits) {
      nlohmann::json roles = nlohmann::json::object();
      for (const char* role : kRoles) roles[role] = b;
      out.push_back(roles);
    }
    return out;
  }
  static constexpr const char* kRoles[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
};

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t k = 0; k < order.size(); ++k) r[order[k]] = static_cast<double>(k);
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double n = static_cast<double>(a.size()), d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

TEST_F(CliPlanStories260k, MixedPlanAtThreeAndAHalfBitsBeatsUniformWidths) {
  FSQ_REQUIRE_STORIES260K();
  nlohmann::json j = plan({"--bits", "3,4", "--target-bits", "3.5"});
  const auto bits = j["plan"]["bits_per_layer"].get<std::vector<int>>();
  ASSERT_EQ(bits.size(), 5u);
  EXPECT_LE(j["plan"]["avg_bits"].get<double>(), 3.5 + 1e-9);
  EXPECT_GT(std::count(bits.begin(), bits.end(), 4), 0);  // the budget buys some 4-bit layers
  EXPECT_LT(j["plan"]["sum_omega"].get<double>(), j["uniform"][0]["sum_omega"].get<double>());

  fs::path plan_file = dir_ / "plan35.json";
  testing::write_file(plan_file, j.dump());
  ASSERT_EQ(quantize(dir_ / "mixed", {"--method", "rtn", "--plan", plan_file.string()}).exit_code, 0);
  ASSERT_EQ(quantize(dir_ / "w3", {"--method", "rtn", "--bits", "3"}).exit_code, 0);
  ASSERT_EQ(quantize(dir_ / "w2", {"--method", "rtn", "--bits", "2"}).exit_code, 0);
  double mixed = evaluate_against_stories260k(dir_ / "mixed").kl;
  double w3 = evaluate_against_stories260k(dir_ / "w3").kl, w2 = evaluate_against_stories260k(dir_ / "w2").kl;
  std::printf("[ plan ] stories260K RTN mean KL: mixed 3.5-bit plan %.4f, uniform 3-bit %.4f, uniform 2-bit %.4f\n", mixed, w3, w2);
  EXPECT_LT(mixed, w3);
  EXPECT_LT(w3, w2);
  // The checkpoint says which widths it holds.
  RunResult inspect = run_fsq({"inspect", (dir_ / "mixed").string()});
  EXPECT_NE(inspect.out.find("w3g64a"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("w4g64a"), std::string::npos) << inspect.out;
}

// The knapsack over linears can choose every per-layer plan, so its optimum is never above
// the per-layer one; the tolerance covers CBC's relative optimality gap on the scaled objective.
constexpr double kSolverRelativeGap = 1e-6;

TEST_F(CliPlanStories260k, PerLinearPlanIsNoWorseInOmegaAndEachLinearGetsItsWidth) {
  FSQ_REQUIRE_STORIES260K();
  nlohmann::json j = plan({"--bits", "3,4", "--target-bits", "3.5", "--per-linear"});
  EXPECT_EQ(j["granularity"], "linear");
  const nlohmann::json& widths = j["plan"]["bits_per_linear"];
  ASSERT_EQ(widths.size(), 5u);
  std::map<int, int> count;
  for (const auto& layer : widths) {
    ASSERT_EQ(layer.size(), 7u) << layer.dump();
    for (const auto& [role, b] : layer.items()) count[b.get<int>()] += 1;
  }
  EXPECT_GT(count[3], 0);
  EXPECT_GT(count[4], 0);
  EXPECT_LE(j["plan"]["avg_bits"].get<double>(), 3.5 + 1e-9);
  const double per_layer = j["per_layer_plan"]["sum_omega"].get<double>();
  EXPECT_LE(j["plan"]["sum_omega"].get<double>(), per_layer * (1 + kSolverRelativeGap));
  std::printf("[ plan ] stories260K sum omega at 3.5 bits: per linear %.6g, per layer %.6g\n",
              j["plan"]["sum_omega"].get<double>(), per_layer);

  fs::path plan_file = dir_ / "per-linear.plan.json";
  testing::write_file(plan_file, j.dump());
  ASSERT_EQ(quantize(dir_ / "per-linear", {"--method", "rtn", "--plan", plan_file.string()}).exit_code, 0);
  const PackedCheckpoint packed = PackedCheckpoint::open(dir_ / "per-linear");
  int checked = 0;
  for (const PackedLinear& l : packed.linears())
    for (int layer = 0; layer < 5; ++layer)
      for (const char* role : kRoles)
        if (l.name.find("layers." + std::to_string(layer) + ".") != std::string::npos &&
            l.name.find(role) != std::string::npos) {
          EXPECT_EQ(l.quant.bits, widths[layer][role].get<int>()) << l.name << " " << l.quant_type;
          checked += 1;
        }
  EXPECT_EQ(checked, 35);
}

// A per-linear plan that gives each layer one width is the per-layer plan: the same KL, to the
// last bit (the checkpoints differ only in the plan recorded in fsq.json). GPTQ then runs on
// whole groups at one width, as before per-linear plans existed.
TEST_F(CliPlanStories260k, PerLinearPlanOfLayerWidthsMatchesThePerLayerPlan) {
  FSQ_REQUIRE_STORIES260K();
  const std::vector<int> bits = {3, 8, 4, 16, 3};
  const std::vector<std::string> rtn_gptq = {"--method", "rtn", "--gptq"};
  EXPECT_EQ(kl_with_linear_widths("lin-rtn-gptq", per_linear(bits), rtn_gptq), kl_with_widths("lay-rtn-gptq", bits, rtn_gptq));
  const std::vector<std::string> squeezellm = {"--method", "squeezellm", "--unweighted", "--dense-only", "--gptq"};
  EXPECT_EQ(kl_with_linear_widths("lin-sq", per_linear(bits), squeezellm), kl_with_widths("lay-sq", bits, squeezellm));
  const std::vector<std::string> awq = {"--method", "awq"};
  EXPECT_EQ(kl_with_linear_widths("lin-awq", per_linear(bits), awq), kl_with_widths("lay-awq", bits, awq));
}

// Widths mixed inside a layer and inside a linear group (q/k/v read one input): squeezellm
// stores LUTs, int8 groups and fp16 side by side; GPTQ rounds a group's linears per width on
// the group's one Hessian, which beats rounding them to nearest, and AWQ's search beats
// rounding too.
TEST_F(CliPlanStories260k, WidthsMixedInsideALayerAreStoredAndRun) {
  FSQ_REQUIRE_STORIES260K();
  nlohmann::json widths = per_linear({4, 4, 4, 4, 4});
  widths[0] = {{"q_proj", 3}, {"k_proj", 4}, {"v_proj", 8}, {"o_proj", 16}, {"gate_proj", 8}, {"up_proj", 3}, {"down_proj", 4}};
  const std::vector<std::string> squeezellm = {"--method", "squeezellm", "--unweighted", "--dense-only"};
  const double mixed = kl_with_linear_widths("sq-lin-mixed", widths, squeezellm);
  const double all3 = kl_with_widths("sq-lin-all3", std::vector<int>(5, 3), squeezellm);
  EXPECT_LT(mixed, all3);
  const RunResult inspect = run_fsq({"inspect", (dir_ / "sq-lin-mixed").string()});
  for (const char* type : {"lut3", "lut4", "w8g", "model.layers.0.self_attn.o_proj.weight"})
    EXPECT_NE(inspect.out.find(type), std::string::npos) << type << inspect.out;

  widths[0] = {{"q_proj", 3}, {"k_proj", 4}, {"v_proj", 8}, {"o_proj", 3}, {"gate_proj", 2}, {"up_proj", 3}, {"down_proj", 4}};
  const double gptq = kl_with_linear_widths("rtn-lin-gptq", widths, {"--method", "rtn", "--gptq"});
  const double nearest = kl_with_linear_widths("rtn-lin-nearest", widths, {"--method", "rtn"});
  // AWQ searches a group's one scale vector with each linear rounded at its own width (and a
  // 16-bit one not rounded).
  widths[1]["v_proj"] = 16;
  const double awq = kl_with_linear_widths("awq-lin", widths, {"--method", "awq"});
  const double rtn16 = kl_with_linear_widths("rtn-lin-16", widths, {"--method", "rtn"});
  std::printf("[ plan ] stories260K per-linear plans, mean KL: squeezellm mixed %.4f (all 3: %.4f); rtn mixed %.4f, "
              "with gptq %.4f; with a 16-bit v_proj: rtn %.4f, awq %.4f\n", mixed, all3, nearest, gptq, rtn16, awq);
  EXPECT_LT(gptq, nearest);
  EXPECT_LT(awq, rtn16);
}

// Five layers give a coarse ranking: the check is that omega agrees with the measured
// order better than chance, and the correlation is printed for the record.
constexpr double kMinRankCorrelation = 0.0;

TEST_F(CliPlanStories260k, OmegaRanksLayersLikeMeasuredKl) {
  FSQ_REQUIRE_STORIES260K();
  nlohmann::json j = plan({"--bits", "3,8", "--target-bits", "8"});
  const auto omega = j["omega_per_layer"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(omega.size(), 5u);
  double base = rtn_kl_with_widths("all8", std::vector<int>(5, 8));
  std::vector<double> indicator, measured;
  for (int layer = 0; layer < 5; ++layer) {
    std::vector<int> bits(5, 8);
    bits[layer] = 3;
    measured.push_back(rtn_kl_with_widths("only" + std::to_string(layer), bits) - base);
    indicator.push_back(omega[layer][0] - omega[layer][1]);
    EXPECT_GT(measured.back(), 0) << "layer " << layer;
  }
  double rho = spearman(indicator, measured);
  std::printf("[ plan ] stories260K: Spearman(omega, measured per-layer KL) = %.3f over 5 layers\n", rho);
  EXPECT_GT(rho, kMinRankCorrelation);
}

TEST_F(CliPlanStories260k, PlanForOtherWeightsOrMethodIsRefused) {
  FSQ_REQUIRE_STORIES260K();
  nlohmann::json j = plan({"--bits", "3,4", "--target-bits", "3.5"});
  j["model_sha256"] = std::string(64, '0');
  fs::path other = dir_ / "other.plan.json";
  testing::write_file(other, j.dump());
  RunResult r = quantize(dir_ / "refused", {"--method", "rtn", "--plan", other.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--plan: was made for other weights"), std::string::npos) << r.err;
  testing::write_file(other, R"({"plan": {"bits_per_layer": [3, 4]}})");
  r = quantize(dir_ / "refused", {"--method", "rtn", "--plan", other.string()});
  EXPECT_NE(r.err.find("widths for 2 layers, the model has 5"), std::string::npos) << r.err;
  testing::write_file(other, R"({"plan": {"bits_per_layer": [3, 4, 5, 3, 3]}})");
  r = quantize(dir_ / "refused", {"--method", "rtn", "--plan", other.string()});
  EXPECT_NE(r.err.find("cannot store 5-bit layers"), std::string::npos) << r.err;
  testing::write_file(other, R"({"plan": {"bits_per_layer": [3, 4, 2, 3, 3]}})");
  r = quantize(dir_ / "refused", {"--method", "squeezellm", "--plan", other.string()});
  EXPECT_NE(r.err.find("cannot store 2-bit layers"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "refused"));
}

// fp16 keeps 11 significant bits: rounding every weight perturbs the logits by ~2^-12
// relative, a KL of order 1e-7 (4.3e-7 measured); the bound leaves 50x for other CPUs while
// staying below what 8-bit layers cost (3e-4 for all five).
constexpr double kFp16LayersMaxKl = 2e-5;

TEST_F(CliPlanStories260k, SixteenBitLayersStayDenseNextToQuantizedOnes) {
  FSQ_REQUIRE_STORIES260K();
  double all16 = rtn_kl_with_widths("all16", std::vector<int>(5, 16));
  EXPECT_LT(all16, kFp16LayersMaxKl);
  RunResult inspect = run_fsq({"inspect", (dir_ / "all16").string()});
  EXPECT_EQ(inspect.out.find("quantized "), std::string::npos) << inspect.out;
  double mixed = rtn_kl_with_widths("mix16", {16, 3, 4, 16, 8});
  double only8 = rtn_kl_with_widths("only8", {16, 16, 16, 16, 8});
  EXPECT_GT(mixed, only8);
  EXPECT_GT(only8, all16);
  inspect = run_fsq({"inspect", (dir_ / "mix16").string()});
  EXPECT_NE(inspect.out.find("w8g64a"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos) << inspect.out;
}

// One checkpoint, two methods by width: a squeezellm plan's 3- and 4-bit layers get LUTs, its
// 8-bit layers round-to-nearest int8 groups, the same bytes as rtn's (so the same KL, to the
// last bit: evaluation is deterministic), and they lower the KL where they replace 3 bits.
TEST_F(CliPlanStories260k, SqueezeLlmPlanStoresItsEightBitLayersAsRtnInt8) {
  FSQ_REQUIRE_STORIES260K();
  const std::vector<std::string> squeezellm = {"--method", "squeezellm", "--unweighted", "--dense-only"};
  const double sq8 = kl_with_widths("sq-all8", std::vector<int>(5, 8), squeezellm);
  EXPECT_EQ(sq8, rtn_kl_with_widths("rtn-all8", std::vector<int>(5, 8)));
  const double mixed = kl_with_widths("sq-mixed", {3, 8, 4, 8, 16}, squeezellm);
  const double three = kl_with_widths("sq-all3", std::vector<int>(5, 3), squeezellm);
  std::printf("[ plan ] stories260K squeezellm plans, mean KL: all 8 %.2e, {3, 8, 4, 8, 16} %.4f, all 3 %.4f\n", sq8,
              mixed, three);
  EXPECT_LT(sq8, mixed);
  EXPECT_LT(mixed, three);
  const RunResult inspect = run_fsq({"inspect", (dir_ / "sq-mixed").string()});
  for (const char* type : {"lut3", "lut4", "w8g"}) EXPECT_NE(inspect.out.find(type), std::string::npos) << type << inspect.out;
}

// With --gptq, a squeezellm plan's 8-bit layers are rounded by GPTQ as well: an all-8-bit
// plan gives exactly what `--method rtn --bits 8 --gptq` gives, and differs from round to
// nearest.
TEST_F(CliPlanStories260k, SqueezeLlmPlanWithGptqRoundsItsEightBitLayersByGptq) {
  FSQ_REQUIRE_STORIES260K();
  const std::vector<int> all8(5, 8);
  const double sq8 = kl_with_widths("sq-all8-gptq", all8, {"--method", "squeezellm", "--unweighted", "--dense-only",
                                                           "--gptq"});
  const double rtn8 = kl_with_widths("rtn-all8-gptq", all8, {"--method", "rtn", "--gptq"});
  const double nearest = rtn_kl_with_widths("rtn-all8-nearest", all8);
  std::printf("[ plan ] stories260K all-8-bit plans, mean KL: squeezellm --gptq %.3e, rtn --gptq %.3e, rtn %.3e\n", sq8,
              rtn8, nearest);
  EXPECT_EQ(sq8, rtn8);
  EXPECT_NE(sq8, nearest);
}

TEST_F(CliPlanStories260k, CalibrationFileOfOtherWeightsIsRefused) {
  FSQ_REQUIRE_STORIES260K();
  // The same model with one weight byte changed: other weights, other sha256.
  fs::path other = dir_ / "other-model";
  fs::create_directories(other);
  for (const auto& e : fs::directory_iterator(stories260k_dir())) fs::copy(e.path(), other / e.path().filename());
  std::string bytes = testing::read_file(other / "model.safetensors");
  bytes[bytes.size() - 1] ^= 0x01;
  testing::write_file(other / "model.safetensors", bytes);
  RunResult r = run_fsq({"plan", "--model", other.string(), "--calib", calibration().string(), "--target-bits", "3.5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(calibration().string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run fsq calibrate on this model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fsq::clitest
