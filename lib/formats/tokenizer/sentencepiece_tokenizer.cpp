// SentencePiece tokenizer.model through libsentencepiece (the reference implementation),
// reached through the C shim in lib/spm_shim (see spm_shim.h for why).
#include <memory>

#include "common/sha256.h"
#include "formats/tokenizer/spm_loader.h"
#include "formats/tokenizer/tokenizer_impl.h"

namespace fsq::tok {
namespace {

constexpr size_t kErrorLen = 512;

class SentencePieceTokenizer final : public TokenizerImpl {
 public:
  explicit SentencePieceTokenizer(const std::filesystem::path& path) : api_(spm_api()) {
    path_ = path;
    if (!std::filesystem::is_regular_file(path)) throw Error(path.string(), "no such file");
    char err[kErrorLen] = {0};
    spm_ = api_.load(path.c_str(), err, sizeof err);
    if (spm_ == nullptr) throw Error(path.string(), one_line(std::string("not a SentencePiece model: ") + err));
    // The model's own defaults; load_tokenizer may override them from the configs.
    bos_id_ = api_.bos_id(spm_);
    eos_id_ = api_.eos_id(spm_);
    add_bos_ = true;
  }
  // From a serialized ModelProto; `source` names it in errors and is path().
  SentencePieceTokenizer(const std::string& model_proto, const std::filesystem::path& source)
      : api_(spm_api()) {
    path_ = source;
    char err[kErrorLen] = {0};
    spm_ = api_.load_bytes(model_proto.data(), model_proto.size(), err, sizeof err);
    if (spm_ == nullptr)
      throw Error(source.string(), one_line(std::string("SentencePiece rejected the model: ") + err));
    bos_id_ = api_.bos_id(spm_);
    eos_id_ = api_.eos_id(spm_);
    add_bos_ = true;
  }
  ~SentencePieceTokenizer() override { api_.free(spm_); }
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text) const override {
    int32_t* ids = nullptr;
    size_t n = 0;
    char err[kErrorLen] = {0};
    if (api_.encode(spm_, text.data(), text.size(), &ids, &n, err, sizeof err) != 0)
      throw Error(path_.string(), one_line(std::string("encode failed: ") + err));
    std::vector<int32_t> out(ids, ids + n);
    api_.release(ids);
    return out;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    char* text = nullptr;
    size_t len = 0;
    char err[kErrorLen] = {0};
    if (api_.decode(spm_, ids.data(), ids.size(), &text, &len, err, sizeof err) != 0)
      throw Error(path_.string(), one_line(std::string("decode failed: ") + err));
    std::string out(text, len);
    api_.release(text);
    return out;
  }

  int32_t vocab_size() const override { return api_.piece_size(spm_); }
  std::string kind() const override { return "sentencepiece"; }

  int32_t token_to_id(std::string_view token) const override {
    return api_.piece_to_id(spm_, token.data(), token.size());
  }

 private:
  const SpmApi& api_;
  fsq_spm* spm_ = nullptr;
};

}  // namespace

std::unique_ptr<TokenizerImpl> open_sentencepiece(const std::filesystem::path& path) {
  auto tok = std::make_unique<SentencePieceTokenizer>(path);
  tok->set_sha256(sha256_file(path));
  return tok;
}

std::unique_ptr<TokenizerImpl> make_sentencepiece(const std::string& model_proto,
                                                  const std::filesystem::path& source) {
  return std::make_unique<SentencePieceTokenizer>(model_proto, source);
}

}  // namespace fsq::tok
