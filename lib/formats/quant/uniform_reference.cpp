// Scalar, unoptimized on purpose: every step is the formula in uniform_quant.h, in float32,
// in the same order, so it can serve as the spec.
#include "formats/quant/uniform_reference.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/half.h"
#include "formats/quant/quant_types.h"

namespace fsq {
namespace {

// Keeps a constant group from producing a zero scale (the header's 1e-5 floor).
constexpr float kMinRange = 1e-5f;

// Stores the scale as fp16 and returns the value every later step must use: codes and
// zeros are computed with the rounded scale, exactly as a dequantizer will see it.
float round_scale(float scale, uint16_t* stored, const std::string& where) {
  *stored = f32_to_f16(scale);
  const float rounded = f16_to_f32(*stored);
  if (!std::isfinite(rounded)) throw Error(where, "group range too large for an fp16 scale");
  return rounded;
}

float clamp_round(float x, float lo, float hi) { return std::clamp(std::nearbyint(x), lo, hi); }

void quantize_group_asym(const float* w, int64_t n, int bits, uint8_t* codes, uint16_t* scale_out,
                         uint8_t* zero_out, const std::string& where) {
  const float qmax = static_cast<float>((1 << bits) - 1);
  const auto [lo_it, hi_it] = std::minmax_element(w, w + n);
  const float lo = std::min(*lo_it, 0.0f), hi = std::max(*hi_it, 0.0f);  // 0 inside the range
  const float scale = round_scale(std::max(hi - lo, kMinRange) / qmax, scale_out, where);
  const float zero = clamp_round(-lo / scale, 0.0f, qmax);
  *zero_out = static_cast<uint8_t>(zero);
  // Round first, then add the zero: nearbyint(x + zero) can differ from nearbyint(x) + zero
  // in float32 when x is just below a half.
  for (int64_t i = 0; i < n; ++i)
    codes[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(w[i] / scale) + zero, 0.0f, qmax));
}

void quantize_group_sym(const float* w, int64_t n, int bits, uint8_t* codes, uint16_t* scale_out,
                        const std::string& where) {
  const float qmax = static_cast<float>((1 << (bits - 1)) - 1);
  const float qmin = -static_cast<float>(1 << (bits - 1));
  const float offset = static_cast<float>(1 << (bits - 1));
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(w[i]));
  const float scale = round_scale(std::max(amax, kMinRange) / qmax, scale_out, where);
  for (int64_t i = 0; i < n; ++i)
    codes[i] = static_cast<uint8_t>(clamp_round(w[i] / scale, qmin, qmax) + offset);
}

void check_quant_shape(int64_t rows, int64_t cols, const UniformQuant& q, const std::string& where) {
  validate_uniform_quant(q, where);
  if (rows <= 0 || cols <= 0)
    throw Error(where, "shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] is empty");
  if (cols % q.group_cols(cols) != 0)
    throw Error(where, std::to_string(cols) + " columns are not a multiple of the group size " +
                           std::to_string(q.group_size));
}

}  // namespace

QuantizedMatrix quantize_uniform(const float* w, int64_t rows, int64_t cols, const UniformQuant& q) {
  const std::string where = "quantize_uniform";
  check_quant_shape(rows, cols, q, where);
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(w[i])) throw Error(where, "weight " + std::to_string(i) + " is not finite");
  QuantizedMatrix m;
  m.quant = q;
  m.rows = rows;
  m.cols = cols;
  const int64_t group = q.group_cols(cols), groups = m.groups();
  m.codes.resize(static_cast<size_t>(rows * cols));
  m.scales.resize(static_cast<size_t>(rows * groups));
  if (!q.symmetric) m.zeros.resize(static_cast<size_t>(rows * groups));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = r * cols + g * group, slot = r * groups + g;
      if (q.symmetric)
        quantize_group_sym(w + first, group, q.bits, &m.codes[first], &m.scales[slot], where);
      else
        quantize_group_asym(w + first, group, q.bits, &m.codes[first], &m.scales[slot], &m.zeros[slot],
                            where);
    }
  }
  return m;
}

void validate_quantized_matrix(const QuantizedMatrix& m, const std::string& where) {
  check_quant_shape(m.rows, m.cols, m.quant, where);
  const auto n = static_cast<size_t>(m.rows * m.cols);
  const auto n_groups = static_cast<size_t>(m.rows * m.groups());
  const auto size_error = [&](const char* what, size_t expected, size_t got) {
    return Error(where, std::string(what) + " count does not match the shape", std::to_string(expected),
                 std::to_string(got));
  };
  if (m.codes.size() != n) throw size_error("code", n, m.codes.size());
  if (m.scales.size() != n_groups) throw size_error("scale", n_groups, m.scales.size());
  const size_t want_zeros = m.quant.symmetric ? 0 : n_groups;
  if (m.zeros.size() != want_zeros) throw size_error("zero point", want_zeros, m.zeros.size());
  const int max_code = (1 << m.quant.bits) - 1;
  for (size_t i = 0; i < n; ++i)
    if (m.codes[i] > max_code)
      throw Error(where, "code " + std::to_string(i) + " is " + std::to_string(m.codes[i]) + ", above " +
                             std::to_string(max_code) + " for " + std::to_string(m.quant.bits) + " bits");
  for (size_t i = 0; i < m.zeros.size(); ++i)
    if (m.zeros[i] > max_code)
      throw Error(where, "zero point " + std::to_string(i) + " is " + std::to_string(m.zeros[i]) +
                             ", above " + std::to_string(max_code));
}

void dequantize_uniform(const QuantizedMatrix& m, float* out) {
  validate_quantized_matrix(m, "dequantize_uniform");
  const int64_t group = m.quant.group_cols(m.cols), groups = m.groups();
  const int implicit_zero = 1 << (m.quant.bits - 1);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t slot = r * groups + g;
      const float scale = f16_to_f32(m.scales[slot]);
      const int zero = m.quant.symmetric ? implicit_zero : m.zeros[slot];
      for (int64_t i = r * m.cols + g * group, end = i + group; i < end; ++i)
        out[i] = static_cast<float>(m.codes[i] - zero) * scale;
    }
  }
}

}  // namespace fsq
