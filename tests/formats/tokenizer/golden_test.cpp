// Golden ids from the reference libraries (HF tokenizers, python sentencepiece) for every
// tokenizer under tests/data/tokenizers/golden: short strings, eval-text prefixes, and the
// whole eval texts (count + sha256 of the id stream).
#include <time.h>

#include "tokenizer_test_support.h"

namespace fsq::test {
namespace {

// Our BPE must stay fast on ~1 MB eval texts (it takes ~0.1 s/MiB in Release); CPU time,
// so other jobs on a shared box do not make it flaky. SentencePiece speed is the library's.
constexpr double kMaxBpeCpuSecondsPerMiB = 5.0;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Index of the first difference, for readable failures on long id lists.
std::string first_difference(const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return "equal";
  return "first difference at index " + std::to_string(i) + " of " + std::to_string(want.size()) +
         ": got " + (i < got.size() ? std::to_string(got[i]) : "end") + ", want " +
         (i < want.size() ? std::to_string(want[i]) : "end");
}

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    golden_ = read_json(data_dir() / "golden" / (GetParam() + ".json"));
    const std::string source = golden_["source"];
    if (source.rfind("shared:", 0) == 0) {
      const std::string rel = source.substr(7);
      FSQ_REQUIRE_SHARED(rel);
      tok_ = load_sentencepiece(shared_dir() / rel);
    } else {
      tok_ = load_hf_tokenizer_json(data_dir() / source);
    }
  }
  nlohmann::json golden_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(GoldenTest, Strings) {
  ASSERT_GT(golden_["cases"].size(), 30u);
  for (const auto& c : golden_["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(tok_->encode(text), c["ids"].get<std::vector<int32_t>>()) << "text: " << text;
  }
}

TEST_P(GoldenTest, EvalTextPrefixes) {
  for (const auto& f : golden_["files"]) {
    const std::string rel = f["path"];
    FSQ_REQUIRE_SHARED(rel);
    const std::string prefix = utf8_prefix(read_file(shared_dir() / rel), f["prefix_chars"]);
    const auto want = f["prefix_ids"].get<std::vector<int32_t>>();
    const auto got = tok_->encode(prefix);
    EXPECT_EQ(got, want) << rel << ": " << first_difference(got, want);
  }
}

TEST_P(GoldenTest, WholeEvalTexts) {
  for (const auto& f : golden_["files"]) {
    const std::string rel = f["path"];
    FSQ_REQUIRE_SHARED(rel);
    const std::string text = read_file(shared_dir() / rel);
    const double t0 = thread_cpu_seconds();
    const auto ids = tok_->encode(text);
    const double seconds = thread_cpu_seconds() - t0;
    EXPECT_EQ(ids.size(), f["total_tokens"].get<size_t>()) << rel;
    EXPECT_EQ(ids_sha256(ids), f["total_sha256"].get<std::string>()) << rel;
    const double mib = static_cast<double>(text.size()) / (1 << 20);
    if (tok_->kind() == "bpe") {
      EXPECT_LT(seconds, kMaxBpeCpuSecondsPerMiB * std::max(mib, 1.0)) << rel;
    }
    std::cout << "[ timing   ] " << GetParam() << " " << rel << ": " << text.size() << " bytes -> "
              << ids.size() << " tokens in " << seconds << " s CPU\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GoldenTest,
                         ::testing::Values("gpt2_style", "llama3_style", "smollm_style",
                                           "qwen2_style", "stories260K", "llama2"));

// Pre-tokenizer configurations on the gpt2_style vocabulary (Split behaviours, invert,
// String patterns, Digits, ByteLevel add_prefix_space / no regex).
TEST(GoldenVariants, PreTokenizers) {
  const auto golden = read_json(data_dir() / "golden/pretokenizer_variants.json");
  auto base = read_json(data_dir() / golden["base"].get<std::string>());
  ASSERT_GE(golden["variants"].size(), 10u);
  for (const auto& v : golden["variants"]) {
    TempDir dir;
    base["pre_tokenizer"] = v["pre_tokenizer"];
    const auto tok = load_json_tokenizer(dir, base);
    for (const auto& c : v["cases"]) {
      const std::string text = c["text"];
      EXPECT_EQ(tok->encode(text), c["ids"].get<std::vector<int32_t>>())
          << "pre_tokenizer " << v["pre_tokenizer"].dump() << ", text: " << text;
    }
  }
}

// Handwritten tokenizer.json files: byte_fallback, unk / fuse_unk, subword prefix and
// suffix, added-token flags (single_word, lstrip, rstrip, normalized), ignore_merges.
TEST(GoldenVariants, HandmadeModels) {
  const auto golden = read_json(data_dir() / "golden/handmade.json");
  ASSERT_GE(golden["tokenizers"].size(), 7u);
  for (const auto& t : golden["tokenizers"]) {
    TempDir dir;
    const auto tok = load_json_tokenizer(dir, t["tokenizer"]);
    for (const auto& c : t["cases"]) {
      const std::string text = c["text"];
      EXPECT_EQ(tok->encode(text), c["ids"].get<std::vector<int32_t>>())
          << t["name"].get<std::string>() << ", text: " << text;
    }
  }
}

}  // namespace
}  // namespace fsq::test
