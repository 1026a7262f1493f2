// Tokenizers built from GGUF metadata (load_gguf_tokenizer): a hand-made tiny GGUF whose ids
// are derived by hand, malformed metadata, and the real SmolLM2-135M-Instruct GGUF against
// tests/data/smollm2/golden.json (scripts/golden/make_smollm2_golden.sh), skipped (failed
// under CI) when the model has not been fetched (scripts/fetch-model.sh smollm2-135m).
#include <cstdlib>
#include <cstring>

#include "formats/gguf/gguf_reader.h"
#include "tokenizer_test_support.h"

namespace fsq::test {
namespace {

// GGUF bytes written by hand (format: magic, u32 version, u64 tensor count, u64 kv count,
// then key/type/value triples), independent of the library's reader.
class TinyGguf {
 public:
  TinyGguf& str(const std::string& key, const std::string& v) { return kv(key, 8, s(v)); }
  TinyGguf& u32(const std::string& key, uint32_t v) { return kv(key, 4, le(v)); }
  TinyGguf& boolean(const std::string& key, bool v) { return kv(key, 7, std::string(1, v ? 1 : 0)); }
  TinyGguf& strs(const std::string& key, const std::vector<std::string>& v) {
    std::string elems;
    for (const std::string& e : v) elems += s(e);
    return kv(key, 9, le<uint32_t>(8) + le<uint64_t>(v.size()) + elems);
  }
  TinyGguf& i32s(const std::string& key, const std::vector<int32_t>& v) {
    std::string elems;
    for (int32_t e : v) elems += le(e);
    return kv(key, 9, le<uint32_t>(5) + le<uint64_t>(v.size()) + elems);
  }
  TinyGguf& f32s(const std::string& key, const std::vector<float>& v) {
    std::string elems;
    for (float e : v) elems += le(e);
    return kv(key, 9, le<uint32_t>(6) + le<uint64_t>(v.size()) + elems);
  }
  std::string bytes() const { return "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(n_) + kvs_; }

 private:
  template <typename T>
  static std::string le(T x) {
    std::string out(sizeof x, '\0');
    std::memcpy(out.data(), &x, sizeof x);  // the test hosts are little-endian
    return out;
  }
  static std::string s(const std::string& v) { return le<uint64_t>(v.size()) + v; }
  TinyGguf& kv(const std::string& key, uint32_t type, const std::string& value) {
    kvs_ += s(key) + le(type) + value;
    ++n_;
    return *this;
  }
  std::string kvs_;
  uint64_t n_ = 0;
};

// A byte-level BPE vocab ("Ġ" is the space, "Ã©" is "é"): ids 0-2 control tokens, 3 a
// user-defined one ("my tok", stored raw with its space, as llama.cpp's converter does).
const std::vector<std::string> kTokens = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "my tok", "h", "e", "l", "o", "Ġ", "w", "r",
    "d", "1", "2", "3", "he", "ll", "hell", "hello", "Ġw", "or", "Ġwor", "ld", "Ġworld", "12",
    "Ġ1", "wd", "Ã", "©", "Ã©"};
const std::vector<int32_t> kTypes = {3, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
const std::vector<std::string> kMerges = {"h e",   "l l",    "he ll",   "hell o", "Ġ w", "o r",
                                          "Ġw or", "l d",    "Ġwor ld", "1 2",    "Ġ 1", "Ã ©"};
enum : int32_t { kHello = 18, kSpace = 8, kSpaceWorld = 23, kOne = 12, kTwo = 13, kThree = 14,
                 kTwelve = 24, kW = 9, kD = 11, kWd = 26, kEAcute = 29 };

TinyGguf tiny(const std::string& pre, bool with_model = true) {
  TinyGguf g;
  g.str("general.architecture", "llama");
  if (with_model) g.str("tokenizer.ggml.model", "gpt2");
  g.str("tokenizer.ggml.pre", pre).strs("tokenizer.ggml.tokens", kTokens);
  g.i32s("tokenizer.ggml.token_type", kTypes).strs("tokenizer.ggml.merges", kMerges);
  g.u32("tokenizer.ggml.bos_token_id", 1).u32("tokenizer.ggml.eos_token_id", 2);
  return g;
}

struct Loaded {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load(const TempDir& dir, const TinyGguf& g, const std::string& name = "tiny.gguf") {
  write_file(dir / name, g.bytes());
  Loaded l;
  l.file = GgufFile::open(dir / name);
  l.tok = load_gguf_tokenizer(*l.file);
  return l;
}

using Ids = std::vector<int32_t>;

TEST(GgufTokenizer, TinySmollmEncodesAsDerivedByHand) {
  TempDir dir;
  const Loaded l = load(dir, tiny("smollm"));
  const Tokenizer& t = *l.tok;
  EXPECT_EQ(t.kind(), "bpe");
  EXPECT_EQ(t.vocab_size(), static_cast<int32_t>(kTokens.size()));
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_FALSE(t.add_bos());  // BPE default without tokenizer.ggml.add_bos_token
  EXPECT_EQ(t.path(), dir / "tiny.gguf");
  // "hello" merges h e -> he, l l -> ll, he ll, hell o; " world" goes Ġw, or, Ġwor, ld.
  EXPECT_EQ(t.encode("hello world"), (Ids{kHello, kSpaceWorld}));
  // Control and user-defined tokens are split out first, even inside words.
  EXPECT_EQ(t.encode("<|im_start|>hello<|im_end|>"), (Ids{1, kHello, 2}));
  EXPECT_EQ(t.encode("hellomy tok<|endoftext|>"), (Ids{kHello, 3, 0}));
  // Digits(individual_digits) runs before ByteLevel: merges "1 2" and "Ġ 1" never apply.
  EXPECT_EQ(t.encode(" 12 3"), (Ids{kSpace, kOne, kTwo, kSpace, kThree}));
  EXPECT_EQ(t.encode("wd"), (Ids{kW, kD}));  // no "w d" merge
  EXPECT_EQ(t.encode("é"), (Ids{kEAcute}));  // bytes C3 A9 -> "Ã©"
  EXPECT_EQ(t.encode(""), Ids{});
  for (const std::string text : {"hello world", "<|im_start|>hello<|im_end|>", " 12 3", "é", "my tok"})
    EXPECT_EQ(t.decode(t.encode(text)), text);
}

TEST(GgufTokenizer, PreNameSelectsThePreTokenizer) {
  TempDir dir;
  // GPT-2 regex: " 12" stays one word, "1 2" (rank 9) beats "Ġ 1" (rank 10).
  for (const std::string pre : {"gpt2", "default"})
    EXPECT_EQ(load(dir, tiny(pre)).tok->encode(" 12 3"), (Ids{kSpace, kTwelve, kSpace, kThree})) << pre;
  // Llama-3: digits in groups of up to 3, and ignore_merges takes a whole-word token as is.
  for (const std::string pre : {"llama-bpe", "llama3"}) {
    const Loaded l = load(dir, tiny(pre));
    EXPECT_EQ(l.tok->encode(" 12 3"), (Ids{kSpace, kTwelve, kSpace, kThree})) << pre;
    EXPECT_EQ(l.tok->encode("wd"), (Ids{kWd})) << pre;
    EXPECT_TRUE(l.tok->add_bos()) << pre;  // llama.cpp's default for Llama-3 files
  }
  // Qwen2: single digits; NFC normalizer composes e + U+0301 into é.
  const Loaded q = load(dir, tiny("qwen2"));
  EXPECT_EQ(q.tok->encode(" 12"), (Ids{kSpace, kOne, kTwo}));
  EXPECT_EQ(q.tok->encode("e\xCC\x81"), (Ids{kEAcute}));
  EXPECT_EQ(q.tok->encode("wd"), (Ids{kW, kD}));
  // The file's add_bos_token wins over the default.
  EXPECT_FALSE(load(dir, tiny("llama3").boolean("tokenizer.ggml.add_bos_token", false)).tok->add_bos());
}

TEST(GgufTokenizer, Sha256DescribesTheTokenizerNotTheFile) {
  TempDir dir;
  const std::string a = load(dir, tiny("smollm"), "a.gguf").tok->sha256();
  const std::string b = load(dir, tiny("smollm").str("general.name", "other"), "b.gguf").tok->sha256();
  const std::string c = load(dir, tiny("gpt2"), "c.gguf").tok->sha256();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, b);  // other metadata (and weights) do not change it
  EXPECT_NE(a, c);  // the pre-tokenizer does
  EXPECT_NE(a, sha256_file(dir / "a.gguf"));
}

// The error names the file, says what is wrong, and is one line.
void expect_error(const TempDir& dir, const TinyGguf& g, const std::vector<std::string>& needles) {
  write_file(dir / "bad.gguf", g.bytes());
  try {
    const auto file = GgufFile::open(dir / "bad.gguf");
    load_gguf_tokenizer(*file);
    ADD_FAILURE() << "no error for " << needles.front();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find((dir / "bad.gguf").string()), std::string::npos) << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(GgufTokenizer, MalformedMetadataIsOneLineErrorNamingTheFile) {
  TempDir dir;
  expect_error(dir, tiny("mystery"), {"'mystery'", "tokenizer.ggml.pre", "smollm", "llama3", "qwen2"});
  expect_error(dir, tiny("smollm", false), {"tokenizer.ggml.model"});
  TinyGguf unknown_token;
  unknown_token.str("tokenizer.ggml.model", "gpt2").str("tokenizer.ggml.pre", "smollm");
  unknown_token.strs("tokenizer.ggml.tokens", kTokens).strs("tokenizer.ggml.merges", {"h e", "x y"});
  expect_error(dir, unknown_token, {"merge 1", "'x'", "not in the vocab"});
  TinyGguf no_merges;
  no_merges.str("tokenizer.ggml.model", "gpt2").strs("tokenizer.ggml.tokens", kTokens);
  expect_error(dir, no_merges, {"tokenizer.ggml.merges"});
  TinyGguf bos_range;
  bos_range.str("tokenizer.ggml.model", "gpt2").strs("tokenizer.ggml.tokens", kTokens);
  bos_range.strs("tokenizer.ggml.merges", kMerges).u32("tokenizer.ggml.bos_token_id", 99);
  expect_error(dir, bos_range, {"tokenizer.ggml.bos_token_id", "99", "outside the vocab"});
  TinyGguf types;
  types.str("tokenizer.ggml.model", "gpt2").strs("tokenizer.ggml.tokens", kTokens);
  types.i32s("tokenizer.ggml.token_type", {1, 1}).strs("tokenizer.ggml.merges", kMerges);
  expect_error(dir, types, {"tokenizer.ggml.token_type", "2 entries"});
  TinyGguf bert;
  bert.str("tokenizer.ggml.model", "bert").strs("tokenizer.ggml.tokens", kTokens);
  expect_error(dir, bert, {"'bert'", "tokenizer.ggml.model"});
}

// GGUF ids are array indices: a huge BOS/EOS id is out of the vocab (not an allocation), and
// a token text repeated at two indices is not two tokens claiming one id (the text keeps its
// last id, as in llama.cpp), so the tokenizer.json id rules never refuse a valid GGUF.
TEST(GgufTokenizer, IdsAreCheckedAgainstTheTokenArray) {
  TempDir dir;
  TinyGguf eos;
  eos.str("tokenizer.ggml.model", "gpt2").strs("tokenizer.ggml.tokens", kTokens);
  eos.strs("tokenizer.ggml.merges", kMerges).u32("tokenizer.ggml.eos_token_id", 4000000000u);
  expect_error(dir, eos, {"tokenizer.ggml.eos_token_id", "4000000000", "outside the vocab of 30 tokens"});
  std::vector<std::string> tokens = kTokens;
  std::vector<int32_t> types = kTypes;
  tokens.push_back("h");
  types.push_back(1);
  TinyGguf repeated;
  repeated.str("general.architecture", "llama").str("tokenizer.ggml.model", "gpt2");
  repeated.str("tokenizer.ggml.pre", "smollm").strs("tokenizer.ggml.tokens", tokens);
  repeated.i32s("tokenizer.ggml.token_type", types).strs("tokenizer.ggml.merges", kMerges);
  const Loaded l = load(dir, repeated);
  EXPECT_EQ(l.tok->vocab_size(), 31);
  EXPECT_EQ(l.tok->encode("hello"), (Ids{kHello}));
}

// ---- "llama" (SentencePiece) GGUF tokenizers ---------------------------------------------

// The pieces of a sentencepiece tokenizer.model, read with a minimal protobuf reader (what
// llama.cpp's converter copies into tokenizer.ggml.tokens/scores/token_type).
struct SpmPieces {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  bool add_dummy_prefix = true;
};

uint64_t read_varint(std::string_view b, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < b.size(); shift += 7) {
    const auto c = static_cast<unsigned char>(b[i++]);
    v |= static_cast<uint64_t>(c & 0x7F) << shift;
    if (!(c & 0x80)) return v;
  }
  throw std::runtime_error("truncated varint");
}

// Calls f(field, varint value, fixed32 bits, length-delimited bytes) for each field.
template <typename F>
void for_each_field(std::string_view msg, F&& f) {
  for (size_t i = 0; i < msg.size();) {
    const uint64_t key = read_varint(msg, i);
    const auto field = static_cast<uint32_t>(key >> 3);
    switch (key & 7) {
      case 0: f(field, read_varint(msg, i), 0u, std::string_view()); break;
      case 1: i += 8; break;
      case 2: {
        const uint64_t n = read_varint(msg, i);
        f(field, 0, 0u, msg.substr(i, n));
        i += n;
        break;
      }
      case 5: {
        uint32_t bits;
        std::memcpy(&bits, msg.data() + i, 4);
        f(field, 0, bits, std::string_view());
        i += 4;
        break;
      }
      default: throw std::runtime_error("unexpected wire type");
    }
  }
}

SpmPieces read_spm_pieces(const fs::path& model) {
  const std::string bytes = read_file(model);
  SpmPieces out;
  for_each_field(bytes, [&](uint32_t field, uint64_t, uint32_t, std::string_view sub) {
    if (field == 1) {  // pieces {piece = 1, score = 2, type = 3}
      std::string piece;
      float score = 0;
      int32_t type = 1;
      for_each_field(sub, [&](uint32_t f, uint64_t v, uint32_t bits, std::string_view s) {
        if (f == 1) piece = std::string(s);
        if (f == 2) std::memcpy(&score, &bits, 4);
        if (f == 3) type = static_cast<int32_t>(v);
      });
      out.tokens.push_back(piece);
      out.scores.push_back(score);
      out.types.push_back(type);
    } else if (field == 3) {  // normalizer_spec.add_dummy_prefix = 3
      for_each_field(sub, [&](uint32_t f, uint64_t v, uint32_t, std::string_view) {
        if (f == 3) out.add_dummy_prefix = v != 0;
      });
    }
  });
  return out;
}

TinyGguf llama_gguf(const SpmPieces& p) {
  TinyGguf g;
  g.str("tokenizer.ggml.model", "llama").strs("tokenizer.ggml.tokens", p.tokens);
  g.f32s("tokenizer.ggml.scores", p.scores).i32s("tokenizer.ggml.token_type", p.types);
  g.boolean("tokenizer.ggml.add_space_prefix", p.add_dummy_prefix);
  g.u32("tokenizer.ggml.bos_token_id", 1).u32("tokenizer.ggml.eos_token_id", 2);
  return g;
}

// A GGUF made from Llama-2's tokenizer.model pieces encodes exactly as SentencePiece encodes
// the tokenizer.model itself (tests/data/tokenizers/golden/llama2.json, from the reference
// library). Not stories260K: its model sets remove_extra_whitespaces, which GGUF cannot
// carry (llama.cpp, and so fsq, keep every space).
TEST(GgufTokenizer, LlamaMatchesSentencePieceGolden) {
  const std::string rel = "models/llama2-tokenizer/tokenizer.model";
  FSQ_REQUIRE_SHARED(rel);
  TempDir dir;
  const SpmPieces pieces = read_spm_pieces(shared_dir() / rel);
  const Loaded l = load(dir, llama_gguf(pieces));
  const Tokenizer& t = *l.tok;
  const auto reference = load_sentencepiece(shared_dir() / rel);
  EXPECT_EQ(t.kind(), "sentencepiece");
  EXPECT_EQ(t.vocab_size(), 32000);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.sha256().size(), 64u);
  const nlohmann::json golden = read_json(data_dir() / "golden/llama2.json");
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(t.encode(text), c["ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(t.decode(t.encode(text)), reference->decode(reference->encode(text))) << text;
  }
  for (const auto& f : golden["files"]) {
    const std::string text = utf8_prefix(read_file(shared_dir() / f["path"].get<std::string>()),
                                         f["prefix_chars"].get<size_t>());
    EXPECT_EQ(t.encode(text), f["prefix_ids"].get<std::vector<int32_t>>()) << f["path"];
  }
}

TEST(GgufTokenizer, LlamaErrorsNameTheFile) {
  TempDir dir;
  SpmPieces p;
  p.tokens = {"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a"};
  p.scores = {0, 0, 0, -1};
  p.types = {2, 3, 3, 1};
  EXPECT_EQ(load(dir, llama_gguf(p)).tok->encode("a"), (Ids{3}));
  TinyGguf no_scores;
  no_scores.str("tokenizer.ggml.model", "llama").strs("tokenizer.ggml.tokens", p.tokens);
  expect_error(dir, no_scores, {"tokenizer.ggml.scores"});
  p.types = {1, 3, 3, 1};  // SentencePiece needs exactly one unknown piece
  expect_error(dir, llama_gguf(p), {"SentencePiece rejected the model"});
  p.types = {2, 3, 3, 9};
  expect_error(dir, llama_gguf(p), {"token_type", "9"});
}

// ---- The real SmolLM2-135M-Instruct GGUF -------------------------------------------------

using ::fsq::testing::smollm2_gguf;

class SmolLM2Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(smollm2_gguf())) return;
    file_ = GgufFile::open(smollm2_gguf());
    tok_ = load_gguf_tokenizer(*file_).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
    file_.reset();
  }
  void SetUp() override {
    FSQ_REQUIRE_SMOLLM2();
    ASSERT_NE(tok_, nullptr);
    golden_ = read_json(fs::path(FSQ_SOURCE_DIR) / "tests/data/smollm2/golden.json");
  }
  static inline std::shared_ptr<const GgufFile> file_;
  static inline const Tokenizer* tok_ = nullptr;
  nlohmann::json golden_;
};

TEST_F(SmolLM2Tokenizer, MetadataMatchesManifest) {
  const nlohmann::json& m = golden_["metadata"];
  EXPECT_EQ(tok_->vocab_size(), 49152);
  EXPECT_EQ(m["vocab_size"].get<int>(), 49152);
  EXPECT_FALSE(tok_->add_bos());
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_EQ(tok_->kind(), "bpe");
  EXPECT_EQ(tok_->path(), smollm2_gguf());
  EXPECT_EQ(fs::file_size(smollm2_gguf()), 98'362'432u) << "not the MANIFEST section 3 file";
  // The Python script computes the same documented hash independently.
  EXPECT_EQ(tok_->sha256(), m["tokenizer_sha256"].get<std::string>());
}

TEST_F(SmolLM2Tokenizer, GoldenStrings) {
  for (const auto& c : golden_["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok_->encode(text);
    EXPECT_EQ(got, want) << "text: " << text;
    EXPECT_EQ(tok_->decode(got), text);
  }
}

TEST_F(SmolLM2Tokenizer, GoldenTexts) {
  FSQ_REQUIRE_SHARED("data/tinystories/tinystories_val.txt");
  for (const auto& f : golden_["files"]) {
    const std::string rel = f["path"].get<std::string>();
    std::string text = read_file(shared_dir() / rel);
    // A prefix of exactly the golden byte count (the script cut it at a UTF-8 boundary).
    const auto bytes = f["bytes"].get<size_t>();
    ASSERT_LE(bytes, text.size()) << rel;
    if (f["whole_file"].get<bool>()) {
      ASSERT_EQ(bytes, text.size()) << rel;
    }
    text.resize(bytes);
    const std::vector<int32_t> ids = tok_->encode(text);
    EXPECT_EQ(ids.size(), f["total_tokens"].get<size_t>()) << rel;
    EXPECT_EQ(ids_sha256(ids), f["total_sha256"].get<std::string>()) << rel;
    const auto first = f["first_ids"].get<std::vector<int32_t>>();
    ASSERT_GE(ids.size(), first.size()) << rel;
    EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + first.size()), first) << rel;
    EXPECT_EQ(tok_->decode(ids), text) << rel;
  }
}

}  // namespace
}  // namespace fsq::test
