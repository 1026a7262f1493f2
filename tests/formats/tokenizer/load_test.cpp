// load_tokenizer(model_dir): file choice, BOS/EOS/add_bos from the side configs.
#include "tokenizer_test_support.h"

namespace fsq::test {
namespace {

const char* const kStoriesDir = "models/stories260K";

void expect_one_line_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected fsq::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << " lacks " << p;
  }
}

TEST(LoadTokenizer, HfDirectoriesReadTokenizerConfig) {
  auto t = load_tokenizer(data_dir() / "llama3_style");
  EXPECT_EQ(t->kind(), "bpe");
  EXPECT_EQ(t->bos_id(), 0);  // <|begin_of_text|>
  EXPECT_EQ(t->eos_id(), 4);  // <|eot_id|>
  EXPECT_TRUE(t->add_bos());  // from the TemplateProcessing post-processor

  t = load_tokenizer(data_dir() / "gpt2_style");
  EXPECT_EQ(t->bos_id(), 0);
  EXPECT_EQ(t->eos_id(), 0);
  EXPECT_FALSE(t->add_bos());

  t = load_tokenizer(data_dir() / "smollm_style");  // eos_token given as {"content": ...}
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  EXPECT_FALSE(t->add_bos());

  t = load_tokenizer(data_dir() / "qwen2_style");
  EXPECT_EQ(t->bos_id(), -1);
  EXPECT_EQ(t->eos_id(), 0);
  EXPECT_FALSE(t->add_bos());
}

TEST(LoadTokenizer, SentencePieceDirectories) {
  FSQ_REQUIRE_SHARED(kStoriesDir);
  auto t = load_tokenizer(shared_dir() / kStoriesDir);
  EXPECT_EQ(t->kind(), "sentencepiece");
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(t->encode_default("Once upon a time"), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(t->sha256(), sha256_file(shared_dir() / kStoriesDir / "tokenizer.model"));

  FSQ_REQUIRE_SHARED("models/llama2-tokenizer");
  t = load_tokenizer(shared_dir() / "models/llama2-tokenizer");  // no side configs at all
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(t->encode_default("Once upon a time"), (std::vector<int32_t>{1, 9038, 2501, 263, 931}));
}

TEST(LoadTokenizer, AddBosTokenFalseWins) {
  FSQ_REQUIRE_SHARED(kStoriesDir);
  TempDir dir;
  fs::copy_file(shared_dir() / kStoriesDir / "tokenizer.model", dir / "tokenizer.model");
  write_file(dir / "tokenizer_config.json", R"({"add_bos_token": false, "eos_token": "</s>"})");
  const auto t = load_tokenizer(dir.path());
  EXPECT_FALSE(t->add_bos());
  EXPECT_EQ(t->eos_id(), 2);
  EXPECT_EQ(t->encode_default("Once upon a time"), (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST(LoadTokenizer, ConfigJsonIdsAreTheFallback) {
  TempDir dir;
  fs::copy_file(data_dir() / "llama3_style/tokenizer.json", dir / "tokenizer.json");
  write_file(dir / "config.json", R"({"bos_token_id": 1, "eos_token_id": [4, 1]})");
  const auto t = load_tokenizer(dir.path());
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 4);
  EXPECT_TRUE(t->add_bos());
}

TEST(LoadTokenizer, PrefersTokenizerJson) {
  FSQ_REQUIRE_SHARED(kStoriesDir);
  TempDir dir;
  fs::copy_file(data_dir() / "gpt2_style/tokenizer.json", dir / "tokenizer.json");
  fs::copy_file(shared_dir() / kStoriesDir / "tokenizer.model", dir / "tokenizer.model");
  EXPECT_EQ(load_tokenizer(dir.path())->kind(), "bpe");
}

// A tokenizer.json fsq cannot run (Llama-2's Metaspace one) yields to tokenizer.model.
TEST(LoadTokenizer, UnsupportedTokenizerJsonFallsBackToModel) {
  auto json = read_json(data_dir() / "gpt2_style/tokenizer.json");
  json["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  TempDir dir;
  write_file(dir / "tokenizer.json", json.dump());
  expect_one_line_error([&] { load_tokenizer(dir.path()); },
                        {(dir / "tokenizer.json").string(), "unsupported pre_tokenizer type 'Metaspace'"});
  FSQ_REQUIRE_SHARED(kStoriesDir);
  fs::copy_file(shared_dir() / kStoriesDir / "tokenizer.model", dir / "tokenizer.model");
  const auto t = load_tokenizer(dir.path());
  EXPECT_EQ(t->kind(), "sentencepiece");
  EXPECT_EQ(t->encode("Once upon a time"), (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST(LoadTokenizer, DirectoryWithoutTokenizer) {
  TempDir dir;
  write_file(dir / "config.json", "{}");
  expect_one_line_error([&] { load_tokenizer(dir.path()); },
                        {dir.path().string(), "no tokenizer.json or tokenizer.model"});
  expect_one_line_error([&] { load_tokenizer(dir / "missing"); },
                        {(dir / "missing").string(), "not a directory"});
}

TEST(LoadTokenizer, MalformedSideConfigs) {
  TempDir dir;
  fs::copy_file(data_dir() / "gpt2_style/tokenizer.json", dir / "tokenizer.json");
  write_file(dir / "tokenizer_config.json", "{\"bos_token\": ");
  expect_one_line_error([&] { load_tokenizer(dir.path()); },
                        {(dir / "tokenizer_config.json").string(), "not valid JSON"});
  fs::remove(dir / "tokenizer_config.json");
  write_file(dir / "config.json", "[1, 2]");
  expect_one_line_error([&] { load_tokenizer(dir.path()); },
                        {(dir / "config.json").string(), "not a JSON object"});
}

}  // namespace
}  // namespace fsq::test
