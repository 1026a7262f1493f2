// Provenance: a packed checkpoint records every option that changed its bytes and the fsq
// build that wrote it (and no clock); the JSON reports of eval, calibrate, inspect and
// quantize carry the command line, a UTC ISO-8601 start time and the fsq version and commit.
#include <gtest/gtest.h>

#include <ctime>
#include <regex>

#include "cli_support.h"
#include "common/sha256.h"
#include "formats/packed_checkpoint.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

// {"version", "commit"} as `fsq --version` prints them (run once).
std::pair<std::string, std::string> printed_version() {
  static const std::pair<std::string, std::string> printed = [] {
    const RunResult r = run_fsq({"--version"});
    std::smatch m;
    const std::regex line(R"(fsq (\S+) \(commit (\S+), \S+ build\)\n)");
    EXPECT_TRUE(std::regex_match(r.out, m, line)) << r.out;
    return m.size() == 3 ? std::pair{m[1].str(), m[2].str()} : std::pair{std::string(), std::string()};
  }();
  return printed;
}

nlohmann::json argv_of(const std::vector<std::string>& args) {
  nlohmann::json argv = nlohmann::json::array({FSQ_BINARY});
  for (const auto& a : args) argv.push_back(a);
  return argv;
}

// The report's invocation names this command line, this build and a start time within
// [before, after] (whole seconds, UTC).
void expect_invocation(const nlohmann::json& report, const std::vector<std::string>& args, std::time_t before,
                       std::time_t after, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(report.contains("invocation")) << report.dump().substr(0, 300);
  const nlohmann::json& inv = report["invocation"];
  EXPECT_EQ(inv["argv"], argv_of(args));
  const auto [version, commit] = printed_version();
  EXPECT_EQ(inv["fsq_version"], version);
  EXPECT_EQ(inv["fsq_commit"], commit);
  const std::string at = inv["started_at"].get<std::string>();
  ASSERT_TRUE(std::regex_match(at, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)"))) << at;
  std::tm tm{};
  ASSERT_NE(strptime(at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << at;
  const std::time_t t = timegm(&tm);
  EXPECT_GE(t, before) << at;
  EXPECT_LE(t, after) << at;
}

TEST(CliProvenance, PackedCheckpointRecordsItsByteChangingOptionsAndProducer) {
  FSQ_REQUIRE_STORIES260K();
  testing::TempDir dir("fsq-cli-provenance");
  testing::write_file(dir / "calib.txt", testing::tail_of(tinystories_val(), 50'000));
  const fs::path out = dir / "q";
  const std::vector<std::string> args = {
      "quantize", "--model", stories260k_dir().string(), "--method", "awq", "--bits", "3", "--group-size", "32",
      "--sym", "--calib-data", (dir / "calib.txt").string(), "--samples", "4", "--seq-len", "64", "--seed", "7",
      "--batch-size", "2", "--layer-inputs", "fp", "--search-tokens", "100", "--threads", "1", "--progress", "off",
      "--out", out.string(), "--json", out.string() + ".json"};
  const std::time_t before = std::time(nullptr);
  RunResult r = run_fsq(args);
  const std::time_t after = std::time(nullptr);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const nlohmann::json manifest = PackedCheckpoint::open(out).manifest();
  const nlohmann::json expected_options = {
      {"method", "awq"},      {"quant_type", "w3g32s"}, {"bits", 3},         {"group_size", 32},
      {"symmetric", true},    {"batch_size", 2},        {"layer_inputs", "fp"}, {"search_tokens", 100},
      {"compute_dtype", "f32"}, {"device", "cpu"},      {"threads", 1},         {"head_bits", 8}};
  EXPECT_EQ(manifest["run_options"], expected_options);
  const nlohmann::json& calibration = manifest["calibration"];
  EXPECT_EQ(calibration["seed"], 7);
  EXPECT_EQ(calibration["samples"], 4);
  EXPECT_EQ(calibration["seq_len"], 64);
  EXPECT_EQ(calibration["data_sha256"], sha256_file(dir / "calib.txt"));
  const auto [version, commit] = printed_version();
  EXPECT_EQ(manifest["producer"], nlohmann::json({{"name", "fsq"}, {"version", version}, {"commit", commit}}));
  // Same inputs, same bytes: no clock in the checkpoint, only in the report beside it.
  EXPECT_EQ(testing::read_file(out / "fsq.json").find("started_at"), std::string::npos);
  expect_invocation(read_json(out.string() + ".json"), args, before, after, "quantize --json");
}

TEST(CliProvenance, JsonReportsCarryTheCommandLineAndAUtcTimestamp) {
  FSQ_REQUIRE_STORIES260K();
  testing::TempDir dir("fsq-cli-provenance");
  testing::write_file(dir / "calib.txt", testing::tail_of(tinystories_val(), 20'000));
  const std::string model = stories260k_dir().string();
  const std::vector<std::pair<std::vector<std::string>, fs::path>> runs = {
      {{"eval", "--model", model, "--data", tinystories_val().string(), "--seq-len", "64", "--max-windows", "1",
        "--no-speed", "--threads", "1", "--progress", "off", "--json", (dir / "eval.json").string()},
       dir / "eval.json"},
      {{"calibrate", "--model", model, "--data", (dir / "calib.txt").string(), "--samples", "2", "--seq-len", "32",
        "--threads", "1", "--progress", "off", "--out", (dir / "calib.safetensors").string(), "--json",
        (dir / "calibrate.json").string()},
       dir / "calibrate.json"},
      {{"inspect", model, "--json", (dir / "inspect.json").string()}, dir / "inspect.json"},
      {{"inspect", model, "--json"}, ""}};  // to stdout
  for (const auto& [args, json] : runs) {
    const std::time_t before = std::time(nullptr);
    RunResult r = run_fsq(args);
    const std::time_t after = std::time(nullptr);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    const nlohmann::json report = json.empty() ? nlohmann::json::parse(r.out) : read_json(json);
    expect_invocation(report, args, before, after, args[0] + (json.empty() ? " --json (stdout)" : " --json FILE"));
  }
}

}  // namespace
}  // namespace fsq::clitest
