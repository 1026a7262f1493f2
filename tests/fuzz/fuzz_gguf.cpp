// libFuzzer target: GgufFile::open_bytes on arbitrary bytes, then every accessor and the
// reference dequantizer on each (bounded) tensor. fsq::Error is the only allowed failure,
// and its message must be one line; anything else (crash, sanitizer report, other
// exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "common/error.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"

namespace {

constexpr int64_t kMaxDequantElements = 1 << 20;  // keeps each run fast

void touch_array(const fsq::GgufArray& a) {
  for (size_t i = 0; i < a.size(); ++i) {
    try {
      if (a.type() == fsq::GgufType::ARRAY)
        touch_array(a.get_array(i));
      else if (a.type() == fsq::GgufType::STRING)
        (void)a.get_string(i).size();
      else
        (void)a.get_f64(i);
    } catch (const fsq::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto g = fsq::GgufFile::open_bytes("fuzz.gguf", std::as_bytes(std::span<const uint8_t>(data, size)));
    for (const auto& [key, value] : g->metadata()) {
      if (const auto* a = std::get_if<fsq::GgufArray>(&value.v)) touch_array(*a);
      try {
        (void)g->get_u64(key);
      } catch (const fsq::Error&) {
      }
    }
    std::vector<float> buf;
    for (const auto& t : g->tensors()) {
      if (g->find_tensor(t.name) != &t) std::abort();
      if (!fsq::can_dequantize(t.type) || t.n_elements > kMaxDequantElements) continue;
      buf.resize(static_cast<size_t>(t.n_elements));
      fsq::dequantize_row(t.type, t.data, buf.data(), t.n_elements);
    }
  } catch (const fsq::Error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) std::abort();  // messages must stay one line
  }
  return 0;
}
