// Tokenizers: SentencePiece (tokenizer.model) and Hugging Face tokenizer.json byte-level BPE,
// also both rebuilt from GGUF metadata, behind one interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fsq {

class GgufFile;

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

// Loads the tokenizer of a checkpoint directory (or of a .gguf file: load_gguf_tokenizer):
// tokenizer.json when present, else
// tokenizer.model; BOS/EOS and add_bos from tokenizer_config.json (add_bos_token) and
// config.json, with the tokenizer's own defaults otherwise. Throws fsq::Error naming the
// directory when neither file exists, or the file and problem when it is malformed: among
// others a config.json bos_token_id/eos_token_id that is not a token of the tokenizer, and
// for tokenizer.json the id rules of formats/tokenizer/token_id.h (every vocab and
// added_tokens id an integer in [0, 2 x tokens defined + 65536), one token per id) and a
// BPE model without its merges list.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& tokenizer_model);
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& tokenizer_json);

// The tokenizer stored in a GGUF file's metadata (tokenizer.ggml.*):
// - model "gpt2": byte-level BPE (tokens, merges, token_type) with tokenizer.ggml.pre
//   "default"/"gpt2"/"gpt-2", "smollm"/"starcoder", "llama-bpe"/"llama3" or "qwen2", each the
//   pre-tokenizer of the Hugging Face tokenizer.json it stands for (absent: "default").
//   Control, user-defined and unknown tokens are split out of the input like tokenizer.json
//   added tokens. kind() "bpe".
// - model "llama": SentencePiece BPE (tokens, scores, token_type; add_space_prefix, default
//   true), encoding exactly as libsentencepiece encodes the tokenizer.model it came from
//   (control tokens in the text are text). kind() "sentencepiece".
// BOS/EOS from tokenizer.ggml.bos_token_id/eos_token_id; add_bos from
// tokenizer.ggml.add_bos_token, else llama.cpp's default (true for "llama" and Llama-3 pre).
// path() is the GGUF file. sha256() identifies the tokenizer, not the file (so it is stable
// when only weights change): the sha256 of a stream of fields, each string as u64-LE length
// + bytes, each number as u64-LE: "fsq-gguf-tokenizer-v1", model, pre ("gpt2": the name,
// "default" when absent; "llama": ""), n_tokens, per token its text, type (1 when no
// token_type) and ("llama") score as f32 bits; then "gpt2": n_merges and each merge string,
// "llama": add_space_prefix as 0/1. Throws fsq::Error naming the file for a missing key, an
// unsupported model or pre-tokenizer, or inconsistent metadata (a merge naming a token
// outside the vocab, a BOS/EOS id out of range, array lengths that differ).
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& gguf);

}  // namespace fsq
