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

void expect_tokenizer_error(const nlohmann::json& j, const std::string& problem) {
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
  expect_tokenizer_error(j, "no 'model' section");
  j = minimal();
  j["model"]["type"] = "WordPiece";
  expect_tokenizer_error(j, "unsupported model type 'WordPiece'");
  j = minimal();
  j["model"].erase("vocab");
  expect_tokenizer_error(j, "model.vocab is missing");
  j = minimal();
  j["model"]["vocab"]["c"] = "three";
  expect_tokenizer_error(j, "model.vocab['c'] is not a non-negative integer id");
  j = minimal();
  j["model"]["vocab"]["c"] = -1;
  expect_tokenizer_error(j, "model.vocab['c'] = -1 is not a valid token id");
  j = minimal();
  j["model"]["unk_token"] = "<unk>";
  expect_tokenizer_error(j, "model.unk_token '<unk>' is not in the vocab");
}

TEST(MalformedTokenizerJson, Merges) {
  auto j = minimal();
  j["model"]["merges"] = nlohmann::json::array({"a c"});
  expect_tokenizer_error(j, "merge 0 ('a' 'c') needs token 'c' that is not in the vocab");
  j["model"]["merges"] = nlohmann::json::array({"a b", "b a"});
  expect_tokenizer_error(j, "merge 1 ('b' 'a') needs token 'ba' that is not in the vocab");
  j["model"]["merges"] = nlohmann::json::array({"ab"});
  expect_tokenizer_error(j, "merge 0 'ab' is not two tokens");
  j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "b", "c"})});
  expect_tokenizer_error(j, "merge 0 is neither");
  j["model"]["merges"] = "a b";
  expect_tokenizer_error(j, "model.merges is not a list");
  j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "b"})});  // newer form
  TempDir dir;
  EXPECT_EQ(load_json_tokenizer(dir, j)->encode("ab"), (std::vector<int32_t>{2}));
}

// Ids are bounded before any id-indexed table is sized by them (4000000000 and 2^40 were a
// std::bad_alloc): the limit is 2 x tokens defined + 65536 (formats/tokenizer/token_id.h).
TEST(MalformedTokenizerJson, HugeVocabIdIsANamedError) {
  auto j = minimal();
  for (const int64_t huge : {int64_t{4000000000}, int64_t{1} << 40, int64_t{INT32_MAX}, int64_t{65544}}) {
    j["model"]["vocab"]["c"] = huge;
    expect_tokenizer_error(j, "model.vocab['c'] = " + std::to_string(huge) + " is not a valid token id");
  }
  j["model"]["vocab"]["c"] = nlohmann::json(uint64_t{18446744073709551615u});
  expect_tokenizer_error(j, "model.vocab['c'] = 18446744073709551615 is not a valid token id");
  j["model"]["vocab"]["c"] = 1.5;
  expect_tokenizer_error(j, "model.vocab['c'] is not a non-negative integer id");
  // 4 tokens defined: ids up to 2 x 4 + 65536 - 1 are accepted (a sparse but sane vocab).
  j["model"]["vocab"]["c"] = 65543;
  TempDir dir;
  EXPECT_EQ(load_json_tokenizer(dir, j)->vocab_size(), 65544);
}

TEST(MalformedTokenizerJson, DuplicateVocabIdNamesBothTokens) {
  auto j = minimal();
  j["model"]["vocab"]["c"] = 1;
  expect_tokenizer_error(j, "token id 1 is given to two tokens: 'b' (model.vocab['b']) and 'c' (model.vocab['c'])");
}

TEST(MalformedTokenizerJson, AddedTokenIdsObeyTheSameRules) {
  auto j = minimal();
  j["added_tokens"] = nlohmann::json::array({{{"id", 4000000000}, {"content", "<s>"}}});
  expect_tokenizer_error(j, "added_tokens[0].id = 4000000000 is not a valid token id");
  j["added_tokens"] = nlohmann::json::array({{{"id", -1}, {"content", "<s>"}}});
  expect_tokenizer_error(j, "added_tokens[0].id = -1 is not a valid token id");
  j["added_tokens"] = nlohmann::json::array({{{"id", 1}, {"content", "<s>"}}});
  expect_tokenizer_error(j, "token id 1 is given to two tokens: 'b' (model.vocab['b']) and '<s>' (added_tokens[0])");
  j["added_tokens"] = nlohmann::json::array({{{"id", 3}, {"content", "<s>"}}, {{"id", 3}, {"content", "</s>"}}});
  expect_tokenizer_error(j, "token id 3 is given to two tokens: '<s>' (added_tokens[0]) and '</s>' (added_tokens[1])");
  j["added_tokens"] = nlohmann::json::array({{{"id", 3}, {"content", ""}}});
  expect_tokenizer_error(j, "added_tokens[0] has empty content");
  // An added token repeating its vocab entry, or naming a vocab text (it takes the vocab's
  // id, as in tokenizers), is fine.
  j["added_tokens"] = nlohmann::json::array({{{"id", 2}, {"content", "ab"}}, {{"id", 7}, {"content", "a"}},
                                             {{"id", 3}, {"content", "<s>"}}});
  TempDir dir;
  const auto tok = load_json_tokenizer(dir, j);
  EXPECT_EQ(tok->vocab_size(), 4);
  EXPECT_EQ(tok->encode("<s>a"), (std::vector<int32_t>{3, 0}));
}

TEST(MalformedTokenizerJson, PostProcessorBosMustBeAToken) {
  auto j = minimal();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", nlohmann::json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {4000000000}}, {"tokens", {"<s>"}}}}}}};
  expect_tokenizer_error(j, "post_processor's BOS id = 4000000000 is not a valid token id");
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {9};
  expect_tokenizer_error(j, "post_processor's BOS id 9 is not a token of the vocab");
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {1};
  TempDir dir;
  const auto tok = load_json_tokenizer(dir, j);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_TRUE(tok->add_bos());
}

// Without merges a BPE encodes character by character: refused, not silently used.
TEST(MalformedTokenizerJson, MergesMissingIsRefused) {
  auto j = minimal();
  j["model"].erase("merges");
  expect_tokenizer_error(j, "model.merges is missing");
  j["model"]["merges"] = nullptr;
  expect_tokenizer_error(j, "model.merges is missing");
  j["model"]["merges"] = {{"a", "b"}};
  expect_tokenizer_error(j, "model.merges is not a list");
  j["model"]["merges"] = nlohmann::json::array();  // present but empty: taken as written
  TempDir dir;
  EXPECT_EQ(load_json_tokenizer(dir, j)->encode("ab"), (std::vector<int32_t>{0, 1}));
}

// config.json's bos/eos ids must name tokens of the tokenizer.
TEST(MalformedTokenizerJson, ConfigBosEosMustBeTokens) {
  TempDir dir;
  write_file(dir / "tokenizer.json", minimal().dump());
  const fs::path config = dir / "config.json";
  auto expect_config_error = [&](const nlohmann::json& c, const std::string& problem) {
    write_file(config, c.dump());
    try {
      load_tokenizer(dir.path());
      ADD_FAILURE() << "expected fsq::Error for: " << problem;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(config.string() + ": ", 0), 0u) << msg;
      EXPECT_NE(msg.find(problem), std::string::npos) << msg << " lacks " << problem;
    }
  };
  expect_config_error({{"bos_token_id", 4000000000}}, "bos_token_id 4000000000 is not a token of the tokenizer");
  expect_config_error({{"eos_token_id", int64_t{1} << 40}}, "eos_token_id 1099511627776 is not a token");
  expect_config_error({{"eos_token_id", 3}}, "eos_token_id 3 is not a token");
  expect_config_error({{"eos_token_id", {-1, 2}}}, "eos_token_id -1 is not a token");
  write_file(config, nlohmann::json({{"bos_token_id", 0}, {"eos_token_id", {2, 1}}}).dump());
  const auto tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 2);
}

TEST(MalformedTokenizerJson, Pipeline) {
  auto j = minimal();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_tokenizer_error(j, "unsupported normalizer type 'Lowercase'");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                        {"behavior", "Isolated"}, {"invert", false}};
  expect_tokenizer_error(j, "invalid regex '(unclosed'");
  j["pre_tokenizer"]["pattern"] = {{"Regex", "a"}};
  j["pre_tokenizer"]["behavior"] = "Sideways";
  expect_tokenizer_error(j, "unknown Split behavior \"Sideways\"");
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_tokenizer_error(j, "unsupported pre_tokenizer type 'Metaspace'");
  j["pre_tokenizer"] = {{"kind", "ByteLevel"}};
  expect_tokenizer_error(j, "pre_tokenizer without a type");
  j = minimal();
  j["added_tokens"] = nlohmann::json::array({{{"content", "<s>"}}});
  expect_tokenizer_error(j, "added token without an integer id");
  j["added_tokens"] = nlohmann::json::object({{"id", 3}});
  expect_tokenizer_error(j, "added_tokens is not a list");
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
