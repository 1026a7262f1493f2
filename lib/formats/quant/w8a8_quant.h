// W8A8 quant types (SmoothQuant): weights int8, symmetric, one fp16 scale per output
// channel, stored exactly as the uniform type w8pcs (quant/uniform_quant.h: code q in
// 0..255 stands for (q - 128) * scale, and |q - 128| <= 127 because the scale is
// max|w| / 127); activations quantized to int8 at run time, symmetric,
//   "w8a8"        per token, dynamic: each row of x gets scale max|x_row| / 127;
//   "w8a8static"  per tensor, static: one scale from calibration, stored per linear;
//   "w8a8b32"     per token and block of 32 columns, dynamic: each block of a row gets
//                 scale max|x_block| / 127 (llama.cpp's Q8_0 activations). One outlier
//                 channel then costs only its own block the resolution, not the whole row:
//                 on text the calibration never saw, channels it never showed large grow
//                 10-35x (SmolLM2's down_proj inputs), which per-token scales cannot absorb.
// The runtime multiplies the two in int8 with int32 accumulation (runtime/cpu/int8_kernels.h;
// per block: runtime/cpu/uniform_q8_kernels.h, the weights read as w8pcs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "formats/quant/uniform_quant.h"

namespace fsq {

enum class ActivationQuant {
  None,       // weight-only type (uniform, LUT)
  PerToken,   // "w8a8"
  PerTensor,  // "w8a8static"
  PerBlock,   // "w8a8b32"
};

// Columns per activation scale of ActivationQuant::PerBlock.
inline constexpr int64_t kW8A8BlockCols = 32;

// The weights of every W8A8 type: 8 bits, per output channel, symmetric (w8pcs).
inline constexpr UniformQuant kW8A8Weights{8, 0, true};

// "w8a8" / "w8a8static" / "w8a8b32"; throws fsq::Error for ActivationQuant::None.
std::string w8a8_quant_name(ActivationQuant mode);
// The activation quantization of a quant-type name: None unless it is a W8A8 name.
ActivationQuant w8a8_mode_of(std::string_view quant_type);
// "per-token" / "per-tensor" / "per-block" (CLI spelling), "none".
const char* activation_quant_label(ActivationQuant mode);
// Parses the CLI spelling; false for anything else.
bool parse_activation_quant(std::string_view label, ActivationQuant* mode);

// Storage cost per weight of a row of `cols` inputs: 8 code bits + one fp16 scale per row
// (the static activation scale, 32 bits per linear, is not counted).
double w8a8_bits_per_weight(int64_t cols);

}  // namespace fsq
