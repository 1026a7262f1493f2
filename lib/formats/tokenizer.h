// Tokenizers: SentencePiece (tokenizer.model) and Hugging Face tokenizer.json byte-level BPE,
// behind one interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fsq {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids exactly as the reference implementation encodes it with no special tokens
  // added (SentencePiece: EncodeAsIds; tokenizers: encode(text, add_special_tokens=False)).
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual std::string kind() const = 0;  // "sentencepiece" or "bpe"

  int32_t bos_id() const { return bos_id_; }  // -1 when none
  int32_t eos_id() const { return eos_id_; }
  bool add_bos() const { return add_bos_; }   // the model's default add-BOS policy
  const std::string& sha256() const { return sha256_; }  // of the tokenizer file
  const std::filesystem::path& path() const { return path_; }

  // encode() with BOS prepended when add_bos() (the model's default tokenization).
  std::vector<int32_t> encode_default(std::string_view text) const;

 protected:
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  bool add_bos_ = false;
  std::string sha256_;
  std::filesystem::path path_;
};

// Loads the tokenizer of a checkpoint directory: tokenizer.json when present, else
// tokenizer.model; BOS/EOS and add_bos from tokenizer_config.json (add_bos_token) and
// config.json, with the tokenizer's own defaults otherwise. Throws fsq::Error naming the
// directory when neither file exists, or the file and problem when it is malformed.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& tokenizer_model);
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& tokenizer_json);

}  // namespace fsq
