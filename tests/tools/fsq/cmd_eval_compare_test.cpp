// fsq eval --compare: identical models give KL 0; a perturbed copy gives the KL that an
// independent in-process computation (own windows, own KL loop in double) gives.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli_support.h"
#include "text_files.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "formats/tokenizer.h"
#include "runtime/model.h"
#include "runtime/threads.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr double kSelfKlMax = 1e-9;
constexpr double kKlRelTol = 1e-6;
constexpr const char* kPerturbed = "model.layers.2.mlp.down_proj.weight";
constexpr int kWindows = 6;
constexpr int64_t kSeqLen = 256;

// Copy of stories260K with `kPerturbed` changed by a deterministic pattern, in its own
// scratch folder.
TempDir write_perturbed_copy() {
  TempDir scratch("fsq-cli-perturbed");
  const fs::path& dir = scratch.path();
  copy_model_side_files(dir);
  auto src = SafetensorsFile::open(stories260k_dir() / "model.safetensors");
  std::vector<std::vector<std::byte>> storage;
  storage.reserve(src->tensors().size());
  std::vector<TensorToWrite> out;
  for (const auto& t : src->tensors()) {
    storage.emplace_back(t.data, t.data + t.nbytes);
    if (t.name == kPerturbed) {
      EXPECT_EQ(t.dtype, DType::F32);
      auto* w = reinterpret_cast<float*>(storage.back().data());
      for (int64_t i = 0; i < t.numel(); ++i) w[i] = w[i] * 1.5f + 0.02f * std::sin(float(i));
    }
    out.push_back({t.name, t.dtype, t.shape, storage.back()});
  }
  write_safetensors(dir / "model.safetensors", out, src->metadata());
  return scratch;
}

// KL(P_ref || P_model) per scored token of bos-window windows, computed here in double.
struct Direct {
  double mean_kl = 0.0;
  double agreement = 0.0;
  int64_t tokens = 0;
};

Direct direct_compare(const fs::path& model_dir, const fs::path& ref_dir) {
  fsq::set_threads(1);
  Checkpoint mc = Checkpoint::open(model_dir), rc = Checkpoint::open(ref_dir);
  auto model = LlamaModel::load(mc, RuntimeOptions{});
  auto ref = LlamaModel::load(rc, RuntimeOptions{});
  std::vector<int32_t> ids = load_tokenizer(ref_dir)->encode(testing::read_file(tinystories_val()));
  Direct d;
  double kl_sum = 0.0;
  int64_t agree = 0;
  for (int w = 0; w < kWindows; ++w) {
    std::vector<int64_t> win = {1};  // BOS + next seq_len-1 tokens
    for (int64_t i = 0; i < kSeqLen - 1; ++i) win.push_back(ids[size_t(w * (kSeqLen - 1) + i)]);
    at::Tensor x = at::tensor(win, at::kLong).unsqueeze(0);
    at::Tensor lm = model->forward(x)[0].to(at::kDouble).contiguous();
    at::Tensor lr = ref->forward(x)[0].to(at::kDouble).contiguous();
    auto a = lm.accessor<double, 2>(), b = lr.accessor<double, 2>();
    const int64_t V = lm.size(1);
    for (int64_t p = 0; p < kSeqLen - 1; ++p) {
      double ma = -1e300, mb = -1e300;
      int64_t am = 0, ar = 0;
      for (int64_t v = 0; v < V; ++v) {
        if (a[p][v] > ma) ma = a[p][v], am = v;
        if (b[p][v] > mb) mb = b[p][v], ar = v;
      }
      double za = 0, zb = 0;
      for (int64_t v = 0; v < V; ++v) za += std::exp(a[p][v] - ma), zb += std::exp(b[p][v] - mb);
      double kl = 0;
      for (int64_t v = 0; v < V; ++v) {
        double lpr = b[p][v] - mb - std::log(zb), lpm = a[p][v] - ma - std::log(za);
        kl += std::exp(lpr) * (lpr - lpm);
      }
      kl_sum += kl;
      agree += am == ar;
      ++d.tokens;
    }
  }
  d.mean_kl = kl_sum / double(d.tokens);
  d.agreement = double(agree) / double(d.tokens);
  return d;
}

std::vector<std::string> compare_args(const fs::path& model, const fs::path& ref, const fs::path& json) {
  return {"eval", "--model", model.string(), "--compare", ref.string(), "--data",
          tinystories_val().string(), "--protocol", "bos-window", "--seq-len", std::to_string(kSeqLen),
          "--max-windows", std::to_string(kWindows), "--batch-size", "1", "--threads", "1",
          "--no-speed", "--progress", "off", "--json", json.string()};
}

TEST(CliCompare, SelfComparisonIsExact) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-self");
  const fs::path& dir = scratch.path();
  RunResult r = run_fsq(compare_args(stories260k_dir(), stories260k_dir(), dir / "r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = read_json(dir / "r.json");
  EXPECT_LE(std::abs(j["compare"]["mean_kl"].get<double>()), kSelfKlMax);
  EXPECT_LE(std::abs(j["compare"]["p99_kl"].get<double>()), kSelfKlMax);
  EXPECT_EQ(j["compare"]["top1_agreement"].get<double>(), 1.0);
  EXPECT_EQ(j["compare"]["ppl_delta"].get<double>(), 0.0);
}

TEST(CliCompare, PerturbedCopyMatchesIndependentKl) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir copy_scratch = write_perturbed_copy();
  const fs::path& copy = copy_scratch.path();
  const TempDir scratch("fsq-cli-cmp");
  const fs::path& dir = scratch.path();
  RunResult r = run_fsq(compare_args(copy, stories260k_dir(), dir / "r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = read_json(dir / "r.json");
  const auto& c = j["compare"];
  Direct d = direct_compare(copy, stories260k_dir());
  EXPECT_EQ(j["perplexity"]["scored_tokens"].get<int64_t>(), d.tokens);
  const double kl = c["mean_kl"].get<double>();
  std::printf("mean KL: fsq eval %.12g, independent %.12g (%d windows)\n", kl, d.mean_kl, kWindows);
  EXPECT_GT(d.mean_kl, 1e-4) << "perturbation too small to test anything";
  EXPECT_NEAR(kl, d.mean_kl, kKlRelTol * d.mean_kl);
  EXPECT_NEAR(c["top1_agreement"].get<double>(), d.agreement, 1.0 / double(d.tokens) + 1e-12);
  EXPECT_GE(c["p99_kl"].get<double>(), kl);
  EXPECT_EQ(c["tokenizer_match"], "identical tokenizer file");
}

// --reference-cache: the first run computes and saves the reference rows, the second reads
// them and reports the very same numbers (the rows are the reference's own float32 logits).
TEST(CliCompare, ReferenceCacheSecondRunReadsTheRowsAndMatchesExactly) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir copy_scratch = write_perturbed_copy();
  const fs::path& copy = copy_scratch.path();
  const TempDir scratch("fsq-cli-refcache");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "cache");
  std::vector<nlohmann::json> runs;
  for (const char* name : {"a.json", "b.json"}) {
    auto args = compare_args(copy, stories260k_dir(), dir / name);
    args.insert(args.end(), {"--reference-cache", (dir / "cache").string()});
    RunResult r = run_fsq(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    runs.push_back(read_json(dir / name));
  }
  const auto &a = runs[0]["compare"], &b = runs[1]["compare"];
  EXPECT_FALSE(a["reference_cache"]["hit"].get<bool>());
  EXPECT_TRUE(b["reference_cache"]["hit"].get<bool>());
  EXPECT_EQ(a["reference_cache"]["path"], b["reference_cache"]["path"]);
  for (const char* k : {"mean_kl", "p99_kl", "max_kl", "top1_agreement", "ref_ppl"})
    EXPECT_EQ(a[k].get<double>(), b[k].get<double>()) << k;
  // One file: the scored rows of 6 windows x 255 tokens x the vocabulary, as float32.
  const int64_t vocab = Checkpoint::open(stories260k_dir()).config().vocab_size;
  EXPECT_EQ(fs::file_size(a["reference_cache"]["path"].get<std::string>()),
            uint64_t(kWindows * (kSeqLen - 1) * vocab * 4));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "cache")) ++files;
  EXPECT_EQ(files, 1u);
  // Without --compare it is refused.
  RunResult bad = run_fsq({"eval", "--model", copy.string(), "--data", tinystories_val().string(),
                           "--reference-cache", (dir / "cache").string(), "--no-speed"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--reference-cache"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fsq::clitest
