// The report carries every provenance field, in JSON and in text.
#include <gtest/gtest.h>

#include "runtime/eval/report.h"

namespace fsq {
namespace {

EvalReport sample() {
  EvalReport r;
  r.fsq_version = "0.1.0";
  r.model = {"models/m", "abc123", "LlamaForCausalLM", 260032, 512, 0.01, {{"dense f32", 35}}, {}, {}, "fast path", "int8 activations in 211 of 211 linears"};
  r.dtype = "f32";
  r.device = "cpu";
  r.threads = 2;
  r.tokenizer_sha256 = "tok";
  r.tokenizer_kind = "sentencepiece";
  r.dataset = DatasetInfo{"data.txt", "d5", 100, 50};
  PerplexityInfo p;
  p.protocol = "bos-window";
  p.seq_len = 256;
  p.stride = 255;
  p.bos_policy = "BOS prepended to every window";
  p.windows = 3;
  p.total_windows = 3;
  p.scored_tokens = 765;
  p.ppl = 5.6986;
  r.perplexity = p;
  CompareInfo c;
  c.reference = r.model;
  c.mean_kl = 0.25;
  c.top1_agreement = 0.9;
  r.compare = c;
  SpeedResult s;
  s.prefill.push_back({128, 3, 0.5});
  s.decode.push_back({8, 16, 64, 3, 2.0});
  r.speed = s;
  r.peak_rss_bytes = 1 << 20;
  r.weight_memory_bytes = 3 << 20;
  r.huge_pages = "madvise";
  return r;
}

TEST(Report, JsonHasProvenanceAndResults) {
  nlohmann::json j = report_json(sample());
  EXPECT_EQ(j["model"]["weights_sha256"], "abc123");
  EXPECT_EQ(j["dataset"]["sha256"], "d5");
  EXPECT_EQ(j["tokenizer"]["sha256"], "tok");
  EXPECT_EQ(j["perplexity"]["protocol"], "bos-window");
  EXPECT_EQ(j["perplexity"]["stride"], 255);
  EXPECT_EQ(j["perplexity"]["scored_tokens"], 765);
  EXPECT_EQ(j["perplexity"]["bos_policy"], "BOS prepended to every window");
  EXPECT_DOUBLE_EQ(j["compare"]["mean_kl"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["speed"]["prefill"][0]["tokens_per_s"].get<double>(), 256.0);
  EXPECT_DOUBLE_EQ(j["speed"]["decode"][0]["tokens_per_s"].get<double>(), 256.0);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["weight_memory"]["mapped_bytes"], 3 << 20);
  EXPECT_EQ(j["weight_memory"]["transparent_huge_pages"], "madvise");
  EXPECT_EQ(j["fsq_version"], "0.1.0");
  EXPECT_EQ(j["model"]["decode_path"], "fast path");
  EXPECT_EQ(j["model"]["prefill_path"], "int8 activations in 211 of 211 linears");
  EXPECT_EQ(j["model"]["prefill_path"], "int8 activations in 211 of 211 linears");
}

TEST(Report, OptionalSectionsAreOmitted) {
  EvalReport r = sample();
  r.compare.reset();
  r.speed.reset();
  nlohmann::json j = report_json(r);
  EXPECT_FALSE(j.contains("compare"));
  EXPECT_FALSE(j.contains("speed"));
}

TEST(Report, TextMentionsTheNumbers) {
  std::string t = report_text(sample());
  EXPECT_NE(t.find("perplexity 5.6986"), std::string::npos) << t;
  EXPECT_NE(t.find("bos-window"), std::string::npos);
  EXPECT_NE(t.find("top-1 agreement 0.9000"), std::string::npos) << t;
  EXPECT_NE(t.find("decode"), std::string::npos);
  EXPECT_NE(t.find("decoding   fast path"), std::string::npos) << t;
  EXPECT_NE(t.find("prefill    int8 activations in 211 of 211 linears"), std::string::npos) << t;
  EXPECT_NE(t.find("weights    in 3.0 MiB of huge-page chunks (transparent huge pages: madvise)"), std::string::npos) << t;
}

TEST(Report, TextWarnsWhenHugePagesAreOff) {
  EvalReport r = sample();
  r.huge_pages = "never";
  const std::string t = report_text(r);
  EXPECT_NE(t.find("huge pages: never; decode reads weights slower"), std::string::npos) << t;
}

}  // namespace
}  // namespace fsq
