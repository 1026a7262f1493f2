// Host references of the CUDA decode-step ops (decode_ops.h): plain loops, double sums, the
// specification the backend tests hold the kernels to. Built with or without CUDA.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/half.h"
#include "runtime/cuda/decode_ops.h"

namespace fsq::cuda {

uint16_t to_act_bits(float v, ActType act) { return act == ActType::F16 ? f32_to_f16(v) : f32_to_bf16(v); }
float from_act_bits(uint16_t bits, ActType act) { return act == ActType::F16 ? f16_to_f32(bits) : bf16_to_f32(bits); }

std::string attention_shape_problem(const AttentionShape& s) {
  if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1 || s.capacity < 1)
    return "batch, heads, kv_heads, head_dim and capacity must be positive";
  if (s.heads % s.kv_heads != 0) return "heads must be a multiple of kv_heads";
  if (s.head_dim % 2 != 0 || s.head_dim > 256) return "head_dim must be even and at most 256";
  if (s.capacity > kMaxAttentionCapacity) return "capacity over " + std::to_string(kMaxAttentionCapacity) + " positions";
  return "";
}

void embed_uniform_rows_reference(const cpu::UniformWeightsView& w, const int32_t* ids, int64_t batch, float* h) {
  const int64_t groups = w.cols / w.group_cols;
  const uint32_t mask = (1u << w.bits) - 1;
  for (int64_t b = 0; b < batch; ++b) {
    float* out = h + b * w.cols;
    if (ids[b] < 0 || ids[b] >= w.rows) {
      std::fill(out, out + w.cols, NAN);
      continue;
    }
    const uint32_t* row = w.words + ids[b] * w.words_per_row;
    for (int64_t k = 0; k < w.cols; ++k) {
      const int64_t bit = k * w.bits, word = bit / 32, off = bit % 32;
      uint64_t pair = row[word];
      if (off + w.bits > 32) pair |= static_cast<uint64_t>(row[word + 1]) << 32;
      const auto q = static_cast<int32_t>((pair >> off) & mask);
      const int64_t g = ids[b] * groups + k / w.group_cols;
      const int32_t z = w.zeros != nullptr ? w.zeros[g] : 1 << (w.bits - 1);
      out[k] = static_cast<float>(q - z) * f16_to_f32(w.scales[g]);
    }
  }
}

void embed_half_rows_reference(const uint16_t* table, int64_t rows, int64_t cols, const int32_t* ids, int64_t batch,
                               float* h) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < cols; ++k)
      h[b * cols + k] = ids[b] >= 0 && ids[b] < rows ? f16_to_f32(table[ids[b] * cols + k]) : NAN;
}

void rms_norm_to_act_reference(const float* x, const float* w, int64_t rows, int64_t cols, float eps, uint16_t* y,
                               ActType act) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = to_act_bits(static_cast<float>(w[c] * (xr[c] * inv)), act);
  }
}

void add_act_reference(float* h, const uint16_t* y, int64_t count, ActType act) {
  for (int64_t i = 0; i < count; ++i) h[i] += from_act_bits(y[i], act);
}

void silu_mul_act_reference(const uint16_t* gate, const uint16_t* up, int64_t rows, int64_t cols, int64_t stride,
                            uint16_t* out, ActType act) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double g = from_act_bits(gate[r * stride + c], act), u = from_act_bits(up[r * stride + c], act);
      out[r * cols + c] = to_act_bits(static_cast<float>(g / (1.0 + std::exp(-g)) * u), act);
    }
}

namespace {

// rotate_half RoPE of one head (act values in, f32 out): out[i] = x[i] cos[i] - x[i + D/2] sin[i]
// for i < D/2, out[i] = x[i] cos[i] + x[i - D/2] sin[i] above.
void rope_head_reference(const uint16_t* x, const float* cos, const float* sin, int64_t d, ActType act, float* out) {
  const int64_t half = d / 2;
  for (int64_t i = 0; i < d; ++i) {
    const double xi = from_act_bits(x[i], act);
    const double rot = i < half ? -static_cast<double>(from_act_bits(x[i + half], act)) : from_act_bits(x[i - half], act);
    out[i] = static_cast<float>(xi * cos[i] + rot * sin[i]);
  }
}

}  // namespace

void rope_append_reference(const AttentionShape& s, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                           int64_t qkv_stride, ActType act, const float* cos, const float* sin, int64_t pos,
                           float* q_out, float* k_cache, float* v_cache) {
  const int64_t d = s.head_dim;
  const float* c = cos + pos * d;
  const float* sn = sin + pos * d;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h)
      rope_head_reference(q + b * qkv_stride + h * d, c, sn, d, act, q_out + (b * s.heads + h) * d);
    for (int64_t h = 0; h < s.kv_heads; ++h) {
      const int64_t slot = ((b * s.kv_heads + h) * s.capacity + pos) * d;
      rope_head_reference(k + b * qkv_stride + h * d, c, sn, d, act, k_cache + slot);
      for (int64_t i = 0; i < d; ++i) v_cache[slot + i] = from_act_bits(v[b * qkv_stride + h * d + i], act);
    }
  }
}

void decode_attention_reference(const AttentionShape& s, const float* q, const float* k_cache, const float* v_cache,
                                int64_t pos, float scale, uint16_t* out, ActType act) {
  const int64_t d = s.head_dim, keys = pos + 1, rep = s.heads / s.kv_heads;
  std::vector<double> p(static_cast<size_t>(keys));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const float* qh = q + (b * s.heads + h) * d;
      const int64_t kv = (b * s.kv_heads + h / rep) * s.capacity * d;
      double top = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(qh[i]) * k_cache[kv + j * d + i];
        p[j] = dot * scale;
        top = std::max(top, p[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < keys; ++j) sum += p[j] = std::exp(p[j] - top);
      for (int64_t i = 0; i < d; ++i) {
        double acc = 0;
        for (int64_t j = 0; j < keys; ++j) acc += p[j] * v_cache[kv + j * d + i];
        out[(b * s.heads + h) * d + i] = to_act_bits(static_cast<float>(acc / sum), act);
      }
    }
}

}  // namespace fsq::cuda
