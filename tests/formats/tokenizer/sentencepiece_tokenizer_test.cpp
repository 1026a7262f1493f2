// SentencePiece facts stated in shared/models/MANIFEST.md (independent of our golden files).
#include "tokenizer_test_support.h"

namespace fsq::test {
namespace {

const char* const kStories = "models/stories260K/tokenizer.model";
const char* const kLlama2 = "models/llama2-tokenizer/tokenizer.model";

TEST(SentencePiece, Stories260KOnceUponATime) {
  FSQ_REQUIRE_SHARED(kStories);
  const auto tok = load_sentencepiece(shared_dir() / kStories);
  EXPECT_EQ(tok->kind(), "sentencepiece");
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->encode("Once upon a time"), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok->encode_default("Once upon a time"),
            (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->decode({403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(tok->sha256(), "fec6aa960a1fb3ebf71d26f9b0e486afcbd76c34cf0fbfb93e21126ca9f778d3");
}

TEST(SentencePiece, Stories260KFirstTokensOfEvalTexts) {
  FSQ_REQUIRE_SHARED(kStories);
  FSQ_REQUIRE_SHARED("data/tinystories/tinystories_val.txt");
  FSQ_REQUIRE_SHARED("data/wikitext-2-raw/wiki.test.raw");
  const auto tok = load_sentencepiece(shared_dir() / kStories);
  const std::vector<int32_t> tiny = {301, 427, 309, 426, 301, 427, 309, 394, 265, 262, 415, 271,
                                     422, 280, 295, 269, 336, 432, 313, 448, 327, 432, 410, 462};
  const std::vector<int32_t> wiki = {410, 64,  410, 461, 414, 430, 285, 413, 368, 277, 421, 413,
                                     285, 410, 64,  410, 13,  410, 461, 414, 430, 285, 413, 368};
  const std::string tiny_text = read_file(shared_dir() / "data/tinystories/tinystories_val.txt");
  const std::string wiki_text = read_file(shared_dir() / "data/wikitext-2-raw/wiki.test.raw");
  // The whole file is one encode() call, as the reference perplexities were measured.
  const auto tiny_ids = tok->encode(tiny_text);
  EXPECT_EQ(tiny_ids.size(), 393012u);
  EXPECT_EQ(std::vector<int32_t>(tiny_ids.begin(), tiny_ids.begin() + 24), tiny);
  const auto wiki_ids = tok->encode(wiki_text);
  EXPECT_EQ(wiki_ids.size(), 806350u);
  EXPECT_EQ(std::vector<int32_t>(wiki_ids.begin(), wiki_ids.begin() + 24), wiki);
}

TEST(SentencePiece, Llama2OnceUponATime) {
  FSQ_REQUIRE_SHARED(kLlama2);
  const auto tok = load_sentencepiece(shared_dir() / kLlama2);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->encode("Once upon a time"), (std::vector<int32_t>{9038, 2501, 263, 931}));
  EXPECT_EQ(tok->decode(tok->encode("Hello, world! Привет 世界")), "Hello, world! Привет 世界");
}

TEST(SentencePiece, NotAModelFile) {
  TempDir dir;
  write_file(dir / "tokenizer.model", "definitely not a protobuf");
  try {
    load_sentencepiece(dir / "tokenizer.model");
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find((dir / "tokenizer.model").string()), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fsq::test
