#include "runtime/quant_linear.h"

#include <ATen/ATen.h>


#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "runtime/activation_mode.h"
#include "runtime/cpu/uniform_q8_kernels.h"
#include "runtime/cpu/w4a4_kernels.h"
#include "runtime/packed_forward.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

void check_size(const std::string& where, const char* what, size_t expected, size_t got) {
  if (expected != got)
    throw Error(where, std::string(what) + " size does not match the quant type and shape",
                std::to_string(expected) + " bytes", std::to_string(got));
}

std::span<const std::byte> view_bytes(const TensorView& v, DType want, const std::string& where) {
  if (v.dtype != want)
    throw Error(where + ": " + v.name, "unexpected dtype", std::string(dtype_name(want)),
                std::string(dtype_name(v.dtype)));
  return {v.data, v.nbytes};
}

}  // namespace

QuantLinear::QuantLinear(const UniformQuant& quant, int64_t rows, int64_t cols, std::span<const std::byte> words,
                         std::span<const std::byte> scales, std::span<const std::byte> zeros,
                         std::optional<at::Tensor> bias, std::string method)
    : PackedKernelLinear(rows, cols, std::move(method)), quant_(quant) {
  const std::string where = "QuantLinear " + uniform_quant_name(quant) + " [" + std::to_string(rows) + " x " +
                            std::to_string(cols) + "]";
  if (rows <= 0 || cols <= 0 || cols % quant.group_cols(cols) != 0)
    throw Error(where, "shape must be positive with cols a multiple of the group size");
  words_per_row_ = packed_words_per_row(quant.bits, cols);
  const auto groups = static_cast<size_t>(rows * quant.group_count(cols));
  check_size(where, "qweight", static_cast<size_t>(rows * words_per_row_) * sizeof(uint32_t), words.size());
  check_size(where, "scales", groups * sizeof(uint16_t), scales.size());
  check_size(where, "qzeros", quant.symmetric ? 0 : groups, zeros.size());
  words_ = copy_aligned(words);
  scales_ = copy_aligned(scales);
  if (!quant.symmetric) zeros_ = copy_aligned(zeros);
  packed_bytes_ = static_cast<int64_t>(words.size() + scales.size() + zeros.size());
  adopt_bias(std::move(bias), where);
}

cpu::UniformWeightsView QuantLinear::weights_view() const {
  cpu::UniformWeightsView v;
  v.words = reinterpret_cast<const uint32_t*>(words_.get());
  v.rows = rows_;
  v.cols = cols_;
  v.words_per_row = words_per_row_;
  v.bits = quant_.bits;
  v.group_cols = quant_.group_cols(cols_);
  v.scales = reinterpret_cast<const uint16_t*>(scales_.get());
  v.zeros = reinterpret_cast<const uint8_t*>(zeros_.get());
  return v;
}

LinearDeviceView QuantLinear::device_view() const {
  return LinearDeviceView(weights_view(), has_bias());
}

// The uniform kernels: uniform_gemv, and with int8 activations uniform_gemv_q8 (decode) and
// uniform_gemm_q8 (prefill).
cpu::KernelStatus QuantLinear::multiply(Kernel kernel, const float* x, int64_t m, float* y) const {
  const cpu::UniformWeightsView w = weights_view();
  if (kernel == Kernel::Gemv) return cpu::uniform_gemv(w, x, m, cols_, y, rows_, isa_);
  if (kernel == Kernel::GemvInt4) return cpu::uniform_gemv_a4(w, x, m, cols_, y, rows_, isa_);
  return kernel == Kernel::GemvInt8 ? cpu::uniform_gemv_q8(w, x, m, cols_, y, rows_, isa_)
                                    : cpu::uniform_gemm_q8(w, x, m, cols_, y, rows_, isa_);
}

bool QuantLinear::int8_supported(Kernel kernel) const {
  return kernel == Kernel::GemvInt8 ? cpu::uniform_q8_supported(weights_view(), isa_)
                                    : cpu::uniform_gemm_q8_supported(weights_view(), isa_);
}

bool QuantLinear::int4_supported() const { return cpu::uniform_a4_supported(weights_view(), isa_); }

cpu::KernelStatus QuantLinear::dequantize_rows(int64_t row0, int64_t nrows, float* out) const {
  return cpu::uniform_dequantize_rows(weights_view(), row0, nrows, out, isa_);
}

void QuantLinear::dequantize_row(int64_t row, float* out) const {
  check_kernel_status(dequantize_rows(row, 1, out), describe());
}

std::string QuantLinear::describe() const {
  std::string s = uniform_quant_name(quant_) + " [" + std::to_string(rows_) + " x " + std::to_string(cols_) + "]";
  return method_.empty() ? s : s + " " + method_;
}

int64_t QuantLinear::weight_bytes() const { return packed_bytes_ + bias_bytes(); }

bool forward_rows_together(std::span<const Linear* const> linears, const float* x, int64_t m,
                           std::span<float* const> ys) {
  constexpr size_t kMaxTogether = 4;
  if (linears.empty() || linears.size() > kMaxTogether || ys.size() != linears.size() || m > cpu::kMaxGemvRows)
    return false;
  // QSpec's draft (runtime/activation_mode.h) fuses them on 4-bit activations instead.
  const bool int4 = decode_activations() == DecodeActivations::Int4PerToken;
  const QuantLinear* quant[kMaxTogether] = {};
  for (size_t j = 0; j < linears.size(); ++j) {
    quant[j] = dynamic_cast<const QuantLinear*>(linears[j]);
    if (quant[j] == nullptr || quant[j]->cpu_isa() != quant[0]->cpu_isa()) return false;
    if (int4 ? quant[j]->cpu_isa() == cpu::CpuIsa::Scalar || !quant[j]->draft_int4() || !quant[j]->int4_supported()
             : !quant[j]->int8_decode())
      return false;
  }
  cpu::UniformWeightsView views[kMaxTogether];
  cpu::Q8GemvOutput outputs[kMaxTogether];
  for (size_t j = 0; j < linears.size(); ++j) {
    views[j] = quant[j]->weights_view();
    outputs[j] = {&views[j], ys[j], views[j].rows};
  }
  const int count = static_cast<int>(linears.size());
  const cpu::KernelStatus st =
      int4 ? cpu::uniform_gemv_a4_together(outputs, count, x, m, views[0].cols, quant[0]->cpu_isa())
           : cpu::uniform_gemv_q8_together(outputs, count, x, m, views[0].cols, quant[0]->cpu_isa());
  if (st == cpu::KernelStatus::InvalidArgument) return false;  // layouts differ: one by one
  check_kernel_status(st, quant[0]->describe());
  for (size_t j = 0; j < linears.size(); ++j) quant[j]->add_bias(m, ys[j]);
  return true;
}

std::unique_ptr<QuantLinear> make_quant_linear(const PackedLinear& packed) {
  const std::string where = "linear " + quote_name(packed.name);
  if (packed.qweight == nullptr || packed.scales == nullptr || (!packed.quant.symmetric && packed.qzeros == nullptr))
    throw Error(where, "packed tensors missing");
  std::optional<at::Tensor> bias;
  if (packed.bias) bias = tensor_from_view(*packed.bias, at::kFloat, c10::Device(c10::kCPU));
  const std::span<const std::byte> zeros =
      packed.qzeros ? view_bytes(*packed.qzeros, DType::U8, where) : std::span<const std::byte>{};
  return std::make_unique<QuantLinear>(packed.quant, packed.rows, packed.cols,
                                       view_bytes(*packed.qweight, DType::I32, where),
                                       view_bytes(*packed.scales, DType::F16, where), zeros, std::move(bias),
                                       packed.method);
}

}  // namespace fsq
