// The Hugging Face pre-tokenizers fsq supports (ByteLevel, Split, Digits, Whitespace,
// WhitespaceSplit, Sequence), reproducing tokenizers' split semantics exactly.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fsq::tok {

class PreTokenizer {
 public:
  // From tokenizer.json's "pre_tokenizer" (null: the segment is one word). Throws
  // UnsupportedTokenizer for types fsq does not implement, fsq::Error for malformed ones.
  PreTokenizer(const nlohmann::json& config, const std::string& where);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;

  // Splits one text segment (valid UTF-8) into words, appended to `words`. The GPT-2 byte
  // mapping is not applied here; see byte_level().
  void split(std::string_view segment, std::vector<std::string>& words) const;

  // True when a ByteLevel pre-tokenizer maps each word's bytes to code points before BPE.
  bool byte_level() const { return byte_level_; }

  struct Step;

 private:
  std::vector<std::unique_ptr<Step>> steps_;
  bool byte_level_ = false;
};

}  // namespace fsq::tok
