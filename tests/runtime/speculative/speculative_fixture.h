// Tiny random models for the speculative-decoding tests, and a 4-bit (or other width) RTN
// copy of one made in-process (a draft that agrees with its source most of the time).
#pragma once

#include <filesystem>
#include <string>

#include "quantize/quantize_model.h"
#include "tiny_model.h"

namespace fsq::test {

// intermediate 80: not a multiple of a SIMD width, so per-row tails are exercised.
inline testing::TinyModelSpec speculative_spec(uint32_t seed) {
  testing::TinyModelSpec s;
  s.hidden = 64;
  s.intermediate = 80;
  s.layers = 3;
  s.heads = 4;
  s.kv_heads = 2;
  s.vocab = 96;
  s.max_positions = 256;
  s.seed = seed;
  s.weight_std = 0.35f;  // peakier logits than the default: fewer near-uniform rows
  return s;
}

inline void quantize_rtn(const std::filesystem::path& model, const std::filesystem::path& out, int bits) {
  QuantizeConfig c;
  c.model = model;
  c.out = out;
  c.method = "rtn";
  c.quant = UniformQuant{bits, 32, false};
  run_quantize(c, [](const std::string&) {});
}

}  // namespace fsq::test
