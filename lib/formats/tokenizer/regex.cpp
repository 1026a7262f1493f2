#define PCRE2_CODE_UNIT_WIDTH 8
#include "formats/tokenizer/regex.h"

#include <pcre2.h>

#include "common/error.h"
#include "formats/tokenizer/utf8.h"

namespace fsq::tok {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  std::string pattern;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, const std::string& where) : impl_(new Impl) {
  impl_->pattern = pattern;
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(where, "invalid regex '" + pattern + "' at offset " + std::to_string(offset) +
                           ": " + reinterpret_cast<const char*>(msg));
  }
  // JIT is an optimisation only: when unavailable pcre2_match interprets the pattern.
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;

std::vector<Span> Regex::find_all(std::string_view text) const {
  std::vector<Span> out;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, opts, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Long whitespace runs can exhaust the JIT stack; the interpreter uses the heap.
      rc = pcre2_match(impl_->code, subject, text.size(), pos, opts | PCRE2_NO_JIT, md.get(),
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error("regex '" + impl_->pattern + "'",
                  std::string("match failed: ") + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t b = ov[0], e = ov[1];
    out.emplace_back(b, e);
    if (e > b) {
      pos = e;
    } else if (e < text.size()) {
      pos = e + utf8_length(static_cast<unsigned char>(text[e]));
    } else {
      break;
    }
  }
  return out;
}

}  // namespace fsq::tok
