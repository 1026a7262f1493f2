// Byte-level BPE (tokenizer.json) properties beyond golden ids: round trips, decode,
// template BOS, NFC, invalid input, concurrent use.
#include <thread>

#include "formats/tokenizer/normalizer.h"
#include "tokenizer_test_support.h"

namespace fsq::test {
namespace {

std::vector<std::string> golden_strings() {
  std::vector<std::string> out;
  const auto golden = read_json(data_dir() / "golden/gpt2_style.json");
  for (const auto& c : golden["cases"]) out.push_back(c["text"]);
  return out;
}

// Byte-level BPE is lossless: every string, special tokens included, decodes back exactly.
TEST(ByteLevelBpe, DecodeInvertsEncode) {
  for (const char* name : {"gpt2_style", "llama3_style", "smollm_style"}) {
    const auto tok = load_hf_tokenizer_json(data_dir() / name / "tokenizer.json");
    for (const std::string& text : golden_strings())
      EXPECT_EQ(tok->decode(tok->encode(text)), text) << name << ": " << text;
  }
}

TEST(ByteLevelBpe, Properties) {
  const auto gpt2 = load_hf_tokenizer_json(data_dir() / "gpt2_style/tokenizer.json");
  EXPECT_EQ(gpt2->kind(), "bpe");
  EXPECT_EQ(gpt2->vocab_size(), 1500);
  EXPECT_EQ(gpt2->bos_id(), -1);  // GPT-2's post-processor adds nothing
  EXPECT_FALSE(gpt2->add_bos());
  EXPECT_EQ(gpt2->sha256(), sha256_file(data_dir() / "gpt2_style/tokenizer.json"));
  EXPECT_EQ(gpt2->path(), data_dir() / "gpt2_style/tokenizer.json");

  // Llama-3 style: TemplateProcessing "<|begin_of_text|> $A" means BOS by default.
  const auto llama3 = load_hf_tokenizer_json(data_dir() / "llama3_style/tokenizer.json");
  EXPECT_EQ(llama3->bos_id(), 0);
  EXPECT_TRUE(llama3->add_bos());
  const auto ids = llama3->encode("Hello world");
  auto with_bos = ids;
  with_bos.insert(with_bos.begin(), 0);
  EXPECT_EQ(llama3->encode_default("Hello world"), with_bos);

  const auto smol = load_hf_tokenizer_json(data_dir() / "smollm_style/tokenizer.json");
  EXPECT_EQ(smol->vocab_size(), 1502);  // 1500 + <think>, </think>
  EXPECT_FALSE(smol->add_bos());
}

TEST(ByteLevelBpe, DecodeKeepsSpecialTokensAndSkipsUnknownIds) {
  const auto smol = load_hf_tokenizer_json(data_dir() / "smollm_style/tokenizer.json");
  const auto hi = smol->encode("hi");
  std::vector<int32_t> ids = {1};
  ids.insert(ids.end(), hi.begin(), hi.end());
  ids.push_back(2);
  ids.push_back(999999);  // past the vocabulary: skipped, as tokenizers does
  ids.push_back(-5);
  EXPECT_EQ(smol->decode(ids), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(smol->decode({}), "");
}

TEST(ByteLevelBpe, InvalidUtf8InputIsAnError) {
  const auto tok = load_hf_tokenizer_json(data_dir() / "gpt2_style/tokenizer.json");
  for (const std::string& bad : {std::string("ab\xff"), std::string("\xc3("),
                                std::string("\xed\xa0\x80"), std::string("\xe2\x82")}) {
    try {
      tok->encode(bad);
      FAIL() << "expected fsq::Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
}

TEST(ByteLevelBpe, ConcurrentEncodeIsConsistent) {
  const auto tok = load_hf_tokenizer_json(data_dir() / "llama3_style/tokenizer.json");
  std::string text;
  for (const std::string& s : golden_strings()) text += s + "\n";
  const auto want = tok->encode(text);
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) threads.emplace_back([&] { g = tok->encode(text); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

// NFC (Qwen2's normalizer) against Python's unicodedata.normalize("NFC", ...).
TEST(Nfc, ComposesLikeUnicodedata) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain ascii", "plain ascii"},
      {"e\u0301", "\u00e9"},
      {"\u212b", "\u00c5"},                      // singleton decomposition
      {"\u1100\u1161\u11a8", "\uac01"},          // Hangul L V T
      {"o\u0308\u0304", "\u022b"},               // two successive compositions
      {"a\u0302\u0323", "\u1ead"},               // canonical reordering first
      {"\u0344", "\u0308\u0301"},                // non-starter decomposition
      {"\u0958", "\u0915\u093c"},                // composition exclusion
      {"\u1e9b\u0323", "\u1e9b\u0323"},
      {"\u0301e", "\u0301e"},                    // leading mark stays
      {"Привет 日本 😀", "Привет 日本 😀"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(tok::nfc(in), want) << in;
}

}  // namespace
}  // namespace fsq::test
