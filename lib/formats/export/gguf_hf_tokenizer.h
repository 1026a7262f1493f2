// The tokenizer.ggml.* keys llama.cpp's convert_hf_to_gguf.py writes for a Hugging Face
// folder's tokenizer, restated from its documented behaviour:
// - tokenizer.model (SentencePiece): model "llama", pre "default", every piece with its score
//   and type (unknown, control, unused and byte pieces keep their type, every other piece is
//   normal), ids up to config.json's vocab_size filled with "[PAD<i>]" (score -10000,
//   unused); added_tokens.json and tokenizer_config.json's added_tokens_decoder override
//   entries (score -1000, control when special or special-looking, else user-defined).
// - tokenizer.json (byte-level BPE): model "gpt2", pre named after its pre-tokenizer
//   (gguf_pre_of_tokenizer_json), tokens and types (added tokens control or user-defined,
//   "[PAD<i>]" unused for ids the vocab skips) and the merges.
// Then, as gguf-py's SpecialVocab: BOS/EOS/UNK/SEP/PAD/CLS/MASK ids from
// tokenizer_config.json's tokens (looked up in tokenizer.json's added tokens) or
// config.json's <type>_token_id, add_bos_token / add_eos_token / add_sep_token from
// tokenizer_config.json, and its chat_template. For LLaMA-architecture models also the
// converter's two LLaMA rules: tokenizer_config.json's add_prefix_space as
// tokenizer.ggml.add_space_prefix, and add_bos_token false for a 49152-token vocab.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "formats/export/gguf_source.h"

namespace fsq {

// The keys for the tokenizer of `dir` (config.json already read into `config`); empty when
// the folder has neither tokenizer.model nor tokenizer.json. `llama_rules`: the
// architecture is converted by llama.cpp's LLaMA converter. Throws fsq::Error naming the
// file for a malformed tokenizer, or a tokenizer.json whose pre-tokenizer llama.cpp has no
// name for (fsq recognizes GPT-2, SmolLM/StarCoder, Llama 3 and Qwen2's).
GgufMetadata gguf_tokenizer_metadata(const std::filesystem::path& dir, const nlohmann::json& config,
                                     int64_t vocab_size, bool llama_rules);

}  // namespace fsq
