#include "runtime/int8_linear.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "runtime/cpu/uniform_q8_kernels.h"
#include "runtime/packed_forward.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

constexpr int kCodeOffset = 128;  // w8pcs: code q stands for q - 128
static_assert(kW8A8BlockCols == cpu::kQ8BlockCols, "w8a8b32 blocks are the Q8 kernels' activation blocks");

cpu::ActQuant kernel_mode(ActivationQuant mode) {
  return mode == ActivationQuant::PerTensor ? cpu::ActQuant::PerTensor : cpu::ActQuant::PerToken;
}

}  // namespace

Int8Linear::Int8Linear(int64_t rows, int64_t cols, std::span<const std::byte> codes, std::span<const std::byte> scales,
                       ActivationQuant mode, float static_scale, std::optional<at::Tensor> bias, std::string method)
    : rows_(rows), cols_(cols), mode_(mode), static_scale_(static_scale), method_(std::move(method)),
      isa_(cpu::selected_cpu_isa()) {
  if (rows <= 0 || cols <= 0 || mode == ActivationQuant::None)
    throw Error(describe(), "W8A8 linear needs a positive shape and an activation quantization");
  const int64_t row_bytes = packed_words_per_row(8, cols) * 4;
  if (static_cast<int64_t>(codes.size()) != rows * row_bytes || static_cast<int64_t>(scales.size()) != rows * 2)
    throw Error(describe(), "stored tensor sizes do not match the shape");
  if (mode == ActivationQuant::PerTensor && !(std::isfinite(static_scale) && static_scale > 0))
    throw Error(describe(), "static activation scale must be finite and > 0");
  std::vector<int8_t> q(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int code = static_cast<int>(static_cast<uint8_t>(codes[static_cast<size_t>(r * row_bytes + c)]));
      if (code == 0) throw Error(describe(), "weight code -128 (codes must be -127 .. 127)");
      q[static_cast<size_t>(r * cols + c)] = static_cast<int8_t>(code - kCodeOffset);
    }
  }
  scales_.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t h;
    std::memcpy(&h, scales.data() + 2 * r, sizeof h);
    scales_[static_cast<size_t>(r)] = f16_to_f32(h);
  }
  if (mode == ActivationQuant::PerBlock) {
    // The codes as stored are w8pcs words: the Q8 kernels read them as they are.
    words_ = copy_aligned(codes);
    half_scales_ = copy_aligned(scales);
    blocks_.words = reinterpret_cast<const uint32_t*>(words_.get());
    blocks_.rows = rows;
    blocks_.cols = cols;
    blocks_.words_per_row = row_bytes / 4;
    blocks_.bits = 8;
    blocks_.group_cols = cols;
    blocks_.scales = reinterpret_cast<const uint16_t*>(half_scales_.get());
    check_kernel_status(cpu::check_uniform_view(blocks_), describe());
  } else {
    const cpu::Int8WeightsView w{q.data(), scales_.data(), rows, cols};
    prepared_ = allocate_aligned(static_cast<size_t>(cpu::int8_prepared_bytes(rows, cols)));
    check_kernel_status(cpu::int8_prepare_weights(w, prepared_.get(), &view_), describe());
  }
  if (bias) {
    if (bias->dim() != 1 || bias->size(0) != rows_ || !at::isFloatingType(bias->scalar_type()))
      throw Error(describe(), "bias must be a floating tensor of shape [" + std::to_string(rows_) + "]");
    bias_ = bias->to(at::kFloat).contiguous().cpu();
  }
}

// Prompts (more rows than a GEMV batch) take the VNNI GEMM, decode the GEMV; both compute
// uniform_gemv_q8_reference's sums within float rounding. A CPU with neither runs the spec.
void Int8Linear::forward_blocks(const float* x, int64_t m, float* y) const {
  cpu::KernelStatus st;
  if (m > cpu::kMaxGemvRows && cpu::uniform_gemm_q8_supported(blocks_, isa_))
    st = cpu::uniform_gemm_q8(blocks_, x, m, cols_, y, rows_, isa_);
  else if (cpu::uniform_q8_supported(blocks_, isa_))
    st = cpu::uniform_gemv_q8(blocks_, x, m, cols_, y, rows_, isa_);
  else
    st = cpu::uniform_gemv_q8_reference(blocks_, x, m, cols_, y, rows_);
  check_kernel_status(st, describe());
}

at::Tensor Int8Linear::forward(const at::Tensor& x) const {
  PackedKernels kernels;
  kernels.matmul = [&](const float* in, int64_t m, float* y) {
    if (mode_ != ActivationQuant::PerBlock)
      return cpu::int8_linear(view_, in, m, cols_, kernel_mode(mode_), static_scale_, y, rows_, isa_);
    forward_blocks(in, m, y);
    return cpu::KernelStatus::Ok;
  };
  return packed_forward(x, rows_, cols_, bias_, kernels, describe());
}

void Int8Linear::forward_rows(const float* x, int64_t m, float* y) const {
  if (mode_ == ActivationQuant::PerBlock)
    forward_blocks(x, m, y);
  else
    check_kernel_status(cpu::int8_linear(view_, x, m, cols_, kernel_mode(mode_), static_scale_, y, rows_, isa_),
                        describe());
  add_bias_rows(bias_ ? bias_->data_ptr<float>() : nullptr, m, rows_, y);
}

std::string Int8Linear::describe() const {
  std::string s = (mode_ == ActivationQuant::None ? std::string("w8a8") : w8a8_quant_name(mode_)) + " [" +
                  std::to_string(rows_) + " x " + std::to_string(cols_) + "]";
  if (!method_.empty()) s += " " + method_;
  return s + ", int8 matmul, " + activation_quant_label(mode_) + " int8 activations";
}

int64_t Int8Linear::weight_bytes() const { return rows_ * cols_ + rows_ * 2 + (bias_ ? rows_ * 4 : 0); }

void Int8Linear::set_cpu_isa(cpu::CpuIsa isa) {
  if (!cpu::cpu_supports(isa))
    throw Error(describe(), std::string("this CPU does not support ") + cpu::cpu_isa_name(isa));
  isa_ = isa;
}

std::unique_ptr<Linear> make_int8_linear(const PackedLinear& packed) {
  std::optional<at::Tensor> bias;
  if (packed.bias) bias = tensor_from_view(*packed.bias, at::kFloat, c10::Device(c10::kCPU));
  float static_scale = 0;
  if (packed.input_scale) std::memcpy(&static_scale, packed.input_scale->data, sizeof static_scale);
  return std::make_unique<Int8Linear>(packed.rows, packed.cols,
                                      std::span<const std::byte>(packed.qweight->data, packed.qweight->nbytes),
                                      std::span<const std::byte>(packed.scales->data, packed.scales->nbytes),
                                      packed.act_quant, static_scale, std::move(bias), packed.method);
}

}  // namespace fsq
