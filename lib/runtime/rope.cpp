// Rotary position tables (HF rotate_half layout), with llama3 and linear frequency scaling.
#include <ATen/ATen.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "common/error.h"
#include "runtime/model.h"

namespace fsq {
namespace {

// Inverse frequencies in double, scaled as config.json's rope_scaling asks.
std::vector<double> inverse_frequencies(const ModelConfig& cfg) {
  const int64_t half = cfg.head_dim / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[i] = 1.0 / std::pow(cfg.rope_theta, static_cast<double>(2 * i) / static_cast<double>(cfg.head_dim));
  if (!cfg.rope_scaling) return inv;
  const RopeScaling& s = *cfg.rope_scaling;
  if (s.type == "linear") {
    for (double& f : inv) f /= s.factor;
  } else if (s.type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, the band between blended.
    const double old_ctx = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_ctx / s.low_freq_factor;
    const double high_wavelen = old_ctx / s.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
  } else {
    throw Error("config.json rope_scaling", "type '" + s.type + "' is not supported; supported: llama3, linear");
  }
  return inv;
}

}  // namespace

RopeTables make_rope_tables(const ModelConfig& cfg, int64_t max_len, c10::ScalarType dtype, c10::Device device) {
  const auto inv = inverse_frequencies(cfg);
  const int64_t half = static_cast<int64_t>(inv.size());
  auto angles = at::empty({max_len, cfg.head_dim}, at::kDouble);
  auto a = angles.accessor<double, 2>();
  for (int64_t p = 0; p < max_len; ++p)
    for (int64_t i = 0; i < half; ++i) a[p][i] = a[p][i + half] = static_cast<double>(p) * inv[i];
  auto opts = at::TensorOptions().dtype(dtype).device(device);
  return {angles.cos().to(opts), angles.sin().to(opts)};
}

}  // namespace fsq
