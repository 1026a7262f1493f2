// fsq calibrate end to end on stories260K: a 128 x 256 run with --fisher, its inspect
// report, reproducibility by seed, and bad inputs (one error line, no partial file).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "calib/calib_file.h"
#include "cli_support.h"
#include "common/sha256.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kLayers = 5;                       // stories260K
constexpr double kMinFisherNonzeroFraction = 0.99;   // every weight of a trained model matters
constexpr double kVarianceSlack = 1e-5;              // sqmean >= mean^2 up to float rounding

std::vector<std::string> calibrate_args(const fs::path& out, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"calibrate", "--model", stories260k_dir().string(), "--data", tinystories_val().string(),
                                "--out", out.string(), "--threads", "1", "--progress", "off"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(CliCalibrate, FisherRunOnStories260KIsSaneAndInspectable) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-calib");
  const fs::path& dir = scratch.path();
  fs::path out = dir / "calib.safetensors";
  RunResult r = run_fsq(calibrate_args(out, {"--samples", "128", "--seq-len", "256", "--fisher", "--json",
                                             (dir / "summary.json").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json summary = read_json(dir / "summary.json");
  EXPECT_EQ(summary["tokens"], 128 * 256);
  EXPECT_GT(summary["fisher_tokens_per_second"].get<double>(), 0.0);
  EXPECT_LT(summary["peak_rss_bytes"].get<int64_t>(), summary["predicted_peak_bytes"].get<int64_t>());

  CalibrationFile file = CalibrationFile::open(out);
  const auto& layers = file.provenance()["layers"];
  ASSERT_EQ(static_cast<int64_t>(layers.size()), kLayers);
  for (const auto& layer : layers) {
    ASSERT_EQ(layer["groups"].size(), 4u);
    for (const auto& group : layer["groups"])
      for (const auto& linear : group["linears"]) {
        const std::string name = linear.get<std::string>();
        auto stats = file.input_stats(name);
        ASSERT_TRUE(stats) << name;
        for (size_t c = 0; c < stats->absmax.size(); ++c) {
          ASSERT_TRUE(std::isfinite(stats->absmax[c]) && std::isfinite(stats->mean[c]) && std::isfinite(stats->sqmean[c]));
          EXPECT_GT(stats->absmax[c], 0.0f) << name;
          EXPECT_GE(stats->sqmean[c] * (1 + kVarianceSlack), stats->mean[c] * stats->mean[c]) << name << " " << c;
          EXPECT_LE(stats->sqmean[c], stats->absmax[c] * stats->absmax[c] * (1 + kVarianceSlack)) << name << " " << c;
        }
        const TensorView* fisher = file.fisher(name);
        ASSERT_NE(fisher, nullptr) << name;
        int64_t positive = 0;
        for (float v : float_span(*fisher)) {
          ASSERT_TRUE(std::isfinite(v) && v >= 0.0f) << name;
          positive += v > 0.0f;
        }
        EXPECT_GE(static_cast<double>(positive), kMinFisherNonzeroFraction * static_cast<double>(fisher->numel())) << name;
      }
  }

  RunResult text = run_fsq({"inspect", out.string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("model.layers.4"), std::string::npos);
  EXPECT_NE(text.out.find("Fisher diagonal per linear"), std::string::npos);
  EXPECT_NE(text.out.find("ratio = max/median"), std::string::npos);
  RunResult json = run_fsq({"inspect", out.string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["kind"], "calibration file");
  ASSERT_EQ(static_cast<int64_t>(report["layers"].size()), kLayers);
  for (const auto& layer : report["layers"]) {
    for (const auto& [name, g] : layer["groups"].items()) EXPECT_GE(g["outlier_ratio"].get<double>(), 1.0) << name;
    EXPECT_EQ(layer["fisher"].size(), 7u);
  }
}

TEST(CliCalibrate, SameSeedSameBytesOtherSeedOtherWindows) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-calib-seed");
  const fs::path& dir = scratch.path();
  const std::vector<std::string> small = {"--samples", "16", "--seq-len", "64", "--fisher", "--batch-size", "5"};
  auto with_seed = [&](const std::string& seed) { auto a = small; a.insert(a.end(), {"--seed", seed}); return a; };
  ASSERT_EQ(run_fsq(calibrate_args(dir / "a.safetensors", with_seed("7"))).exit_code, 0);
  ASSERT_EQ(run_fsq(calibrate_args(dir / "b.safetensors", with_seed("7"))).exit_code, 0);
  ASSERT_EQ(run_fsq(calibrate_args(dir / "c.safetensors", with_seed("8"))).exit_code, 0);
  EXPECT_EQ(sha256_file(dir / "a.safetensors"), sha256_file(dir / "b.safetensors"));
  EXPECT_NE(sha256_file(dir / "a.safetensors"), sha256_file(dir / "c.safetensors"));
  auto starts = [&](const char* f) { return CalibrationFile::open(dir / f).provenance()["window_starts"]; };
  EXPECT_EQ(starts("a.safetensors").size(), 16u);
  EXPECT_NE(starts("a.safetensors"), starts("c.safetensors"));
}

void expect_clean_failure(const RunResult& r, const fs::path& out, const std::string& mentions) {
  EXPECT_GT(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "partial output left: " << out;
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary file left: " << e.path();
}

TEST(CliCalibrate, BadInputsFailCleanly) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-calib-bad");
  const fs::path& dir = scratch.path();
  fs::path out = dir / "out.safetensors";
  std::ofstream(dir / "empty.txt").close();
  std::ofstream(dir / "short.txt") << "Once upon a time.";
  auto run_with = [&](const fs::path& data, const std::vector<std::string>& extra, const fs::path& o) {
    std::vector<std::string> a = {"calibrate", "--model", stories260k_dir().string(), "--data", data.string(),
                                  "--out", o.string(), "--threads", "1", "--progress", "off"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_fsq(a);
  };
  expect_clean_failure(run_with(dir / "empty.txt", {}, out), out, "empty.txt");
  expect_clean_failure(run_with(dir / "short.txt", {"--seq-len", "256"}, out), out, "too little text");
  expect_clean_failure(run_with(tinystories_val(), {"--seq-len", "1024"}, out), out, "--seq-len");
  // /proc refuses new files even for root: the run stops before any work.
  RunResult unwritable = run_with(tinystories_val(), {"--samples", "2", "--seq-len", "16"}, "/proc/fsq-calib.safetensors");
  EXPECT_GT(unwritable.exit_code, 0);
  EXPECT_EQ(lines(unwritable.err), 1u) << unwritable.err;
  EXPECT_NE(unwritable.err.find("/proc/fsq-calib.safetensors"), std::string::npos) << unwritable.err;
}

// 600 bytes of TinyStories (a few hundred tokens) cannot fill 8 windows of 64 tokens without
// repeating text: refused with the counts and nothing written; --allow-overlap runs it with
// a one-line note on stderr, the same bytes as before the check existed.
TEST(CliCalibrate, TextTooShortForTheWindowsIsRefusedUnlessAllowOverlap) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-calib-overlap");
  const fs::path& dir = scratch.path();
  const fs::path data = dir / "short.txt", out = dir / "calib.safetensors", json = dir / "calib.json";
  testing::write_file(data, testing::tail_of(tinystories_val(), 600));
  auto with_data = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--samples", "8", "--seq-len", "64", "--json", json.string()});
    std::vector<std::string> a = calibrate_args(out, extra);
    a[4] = data.string();  // --data
    return a;
  };
  RunResult refused = run_fsq(with_data({}));
  expect_clean_failure(refused, out, data.string() + ": too little text for the calibration windows without overlap");
  EXPECT_NE(refused.err.find("8 windows of 63 text tokens need 504"), std::string::npos) << refused.err;
  for (const char* way : {"--seq-len", "--samples", "more text", "--allow-overlap"})
    EXPECT_NE(refused.err.find(way), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(json));

  RunResult ok = run_fsq(with_data({"--allow-overlap"}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(lines(ok.err), 1u) << ok.err;
  EXPECT_EQ(ok.err.rfind("fsq: note: " + data.string() + ": the text has ", 0), 0u) << ok.err;
  EXPECT_NE(ok.err.find("windows overlap (--allow-overlap)"), std::string::npos) << ok.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_EQ(CalibrationFile::open(out).provenance()["window_starts"].size(), 8u);
}

}  // namespace
}  // namespace fsq::clitest
