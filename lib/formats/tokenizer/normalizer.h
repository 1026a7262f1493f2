// tokenizer.json normalizers fsq supports: none, NFC (Qwen2), and Sequences of those.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace fsq::tok {

// Unicode Normalization Form C of valid UTF-8 text.
std::string nfc(std::string_view text);

class Normalizer {
 public:
  // From tokenizer.json's "normalizer"; throws UnsupportedTokenizer naming the type for
  // anything but null, NFC or a Sequence of NFC.
  Normalizer(const nlohmann::json& config, const std::string& where);
  bool identity() const { return !nfc_; }
  std::string apply(std::string_view text) const { return nfc_ ? nfc(text) : std::string(text); }

 private:
  bool nfc_ = false;
};

}  // namespace fsq::tok
