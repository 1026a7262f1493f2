#include "runtime/rope.h"

#include <ATen/ATen.h>

#include <cmath>
#include <numbers>

#include "common/error.h"
#include "runtime/rope_size.h"

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

// Angles in double, converted to `dtype` in chunks of rows so that the double temporaries
// stay small next to the tables themselves.
RopeTables build_tables(const std::vector<double>& inv, int64_t head_dim, int64_t positions, c10::ScalarType dtype,
                        c10::Device device) {
  constexpr int64_t kChunkRows = 1024;
  const int64_t half = static_cast<int64_t>(inv.size());
  const auto cpu = at::TensorOptions().dtype(dtype);
  RopeTables t{at::empty({positions, head_dim}, cpu), at::empty({positions, head_dim}, cpu)};
  for (int64_t first = 0; first < positions; first += kChunkRows) {
    const int64_t rows = std::min(kChunkRows, positions - first);
    auto angles = at::empty({rows, head_dim}, at::kDouble);
    auto a = angles.accessor<double, 2>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < half; ++i) a[r][i] = a[r][i + half] = static_cast<double>(first + r) * inv[i];
    t.cos.narrow(0, first, rows).copy_(angles.cos());
    t.sin.narrow(0, first, rows).copy_(angles.sin());
  }
  if (device.is_cpu()) return t;
  return {t.cos.to(device), t.sin.to(device)};
}

}  // namespace

RopeTables make_rope_tables(const ModelConfig& cfg, int64_t positions, c10::ScalarType dtype, c10::Device device) {
  return build_tables(inverse_frequencies(cfg), cfg.head_dim, positions, dtype, device);
}

RotaryCache::RotaryCache(const ModelConfig& cfg, c10::ScalarType dtype, c10::Device device)
    : inverse_frequencies_(inverse_frequencies(cfg)),
      head_dim_(cfg.head_dim),
      max_positions_(cfg.max_position_embeddings),
      dtype_(dtype),
      device_(device) {}

RopeTables RotaryCache::tables(int64_t end) const {
  if (end > max_positions_)
    throw Error("forward", "positions up to " + std::to_string(end) + " exceed the model's maximum " +
                               std::to_string(max_positions_) + " (max_position_embeddings)");
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t wanted = rope_table_positions(end, built_positions_, max_positions_);
  if (wanted > built_positions_) {
    built_ = build_tables(inverse_frequencies_, head_dim_, wanted, dtype_, device_);
    built_positions_ = wanted;
  }
  return built_;
}

int64_t RotaryCache::positions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return built_positions_;
}

}  // namespace fsq
