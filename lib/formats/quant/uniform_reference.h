// The scalar reference of uniform quantization (the math in uniform_quant.h). It is the
// spec: packers, exporters and every optimized kernel are tested against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/quant/uniform_quant.h"

namespace fsq {

// Canonical (unpacked) values of one quantized weight matrix [rows, cols].
struct QuantizedMatrix {
  UniformQuant quant;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> codes;    // [rows, cols], one code per weight, 0..2^bits-1
  std::vector<uint16_t> scales;  // [rows, groups], fp16 bit patterns
  std::vector<uint8_t> zeros;    // [rows, groups], asymmetric only; empty when symmetric

  int64_t groups() const { return quant.group_count(cols); }
};

// Quantizes row-major w [rows, cols]. Throws fsq::Error on an invalid quant type, on
// cols not a multiple of the group size, on non-finite weights, or when a group's scale
// overflows fp16.
QuantizedMatrix quantize_uniform(const float* w, int64_t rows, int64_t cols, const UniformQuant& q);

// Writes the dequantized weights (rows * cols floats) to `out`. Validates `m` first.
void dequantize_uniform(const QuantizedMatrix& m, float* out);

// Throws fsq::Error(where, ...) unless m's sizes agree with its quant type and shape, every
// code is in range and every zero point is in 0..2^bits-1.
void validate_quantized_matrix(const QuantizedMatrix& m, const std::string& where);

}  // namespace fsq
