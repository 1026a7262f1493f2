// Malformed or unsupported tokenizer.json files: each is one fsq::Error, one line, naming
// the file and the problem.
#include "tokenizer_test_support.h"

namespace fsq::test {
namespace {

nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null,
    "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
}

// Loads `text` as a tokenizer.json and expects an fsq::Error containing `problem`.
void expect_text_error(const std::string& text, const std::string& problem) {
  TempDir dir;
  const fs::path path = dir / "tokenizer.json";
  write_file(path, text);
  try {
    load_hf_tokenizer_json(path);
    ADD_FAILURE() << "expected fsq::Error for: " << problem;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path.string() + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << msg << " lacks " << problem;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

void expect_error(const nlohmann::json& j, const std::string& problem) {
  expect_text_error(j.dump(), problem);
}

TEST(MalformedTokenizerJson, MinimalIsValid) {
  TempDir dir;
  const auto tok = load_json_tokenizer(dir, minimal());
  EXPECT_EQ(tok->encode("ab"), (std::vector<int32_t>{2}));
  EXPECT_EQ(tok->encode("bab"), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(tok->decode({1, 2}), "b ab");  // no decoder: tokens joined by spaces
  EXPECT_EQ(tok->vocab_size(), 3);
}

TEST(MalformedTokenizerJson, NotJson) {
  expect_text_error("{ \"model\": \n nope", "not valid JSON");
  expect_text_error("", "not valid JSON");
  expect_text_error("[1, 2]", "not a JSON object");
}

TEST(MalformedTokenizerJson, Model) {
  auto j = minimal();
  j.erase("model");
  expect_error(j, "no 'model' section");
  j = minimal();
  j["model"]["type"] = "WordPiece";
  expect_error(j, "unsupported model type 'WordPiece'");
  j = minimal();
  j["model"].erase("vocab");
  expect_error(j, "model.vocab is missing");
  j = minimal();
  j["model"]["vocab"]["c"] = "three";
  expect_error(j, "model.vocab['c'] is not a non-negative integer id");
  j = minimal();
  j["model"]["vocab"]["c"] = -1;
  expect_error(j, "model.vocab['c']");
  j = minimal();
  j["model"]["unk_token"] = "<unk>";
  expect_error(j, "model.unk_token '<unk>' is not in the vocab");
}

TEST(MalformedTokenizerJson, Merges) {
  auto j = minimal();
  j["model"]["merges"] = nlohmann::json::array({"a c"});
  expect_error(j, "merge 0 ('a' 'c') needs token 'c' that is not in the vocab");
  j["model"]["merges"] = nlohmann::json::array({"a b", "b a"});
  expect_error(j, "merge 1 ('b' 'a') needs token 'ba' that is not in the vocab");
  j["model"]["merges"] = nlohmann::json::array({"ab"});
  expect_error(j, "merge 0 'ab' is not two tokens");
  j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "b", "c"})});
  expect_error(j, "merge 0 is neither");
  j["model"]["merges"] = "a b";
  expect_error(j, "model.merges is not a list");
  j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "b"})});  // newer form
  TempDir dir;
  EXPECT_EQ(load_json_tokenizer(dir, j)->encode("ab"), (std::vector<int32_t>{2}));
}

TEST(MalformedTokenizerJson, Pipeline) {
  auto j = minimal();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_error(j, "unsupported normalizer type 'Lowercase'");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                        {"behavior", "Isolated"}, {"invert", false}};
  expect_error(j, "invalid regex '(unclosed'");
  j["pre_tokenizer"]["pattern"] = {{"Regex", "a"}};
  j["pre_tokenizer"]["behavior"] = "Sideways";
  expect_error(j, "unknown Split behavior \"Sideways\"");
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_error(j, "unsupported pre_tokenizer type 'Metaspace'");
  j["pre_tokenizer"] = {{"kind", "ByteLevel"}};
  expect_error(j, "pre_tokenizer without a type");
  j = minimal();
  j["added_tokens"] = nlohmann::json::array({{{"content", "<s>"}}});
  expect_error(j, "added token without an integer id");
  j["added_tokens"] = nlohmann::json::object({{"id", 3}});
  expect_error(j, "added_tokens is not a list");
}

TEST(MalformedTokenizerJson, MissingFile) {
  TempDir dir;
  try {
    load_hf_tokenizer_json(dir / "nope.json");
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "nope.json").string()), std::string::npos);
  }
}

}  // namespace
}  // namespace fsq::test
