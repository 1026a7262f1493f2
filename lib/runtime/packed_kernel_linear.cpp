#include "runtime/packed_kernel_linear.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "runtime/activation_mode.h"
#include "runtime/packed_forward.h"

namespace fsq {

PackedKernelLinear::PackedKernelLinear(int64_t rows, int64_t cols, std::string method)
    : rows_(rows), cols_(cols), method_(std::move(method)), isa_(cpu::selected_cpu_isa()) {}

void PackedKernelLinear::adopt_bias(std::optional<at::Tensor> bias, const std::string& where) {
  if (!bias) return;
  if (bias->dim() != 1 || bias->size(0) != rows_ || !at::isFloatingType(bias->scalar_type()))
    throw Error(where, "bias must be a floating tensor of shape [" + std::to_string(rows_) + "]");
  bias_ = bias->to(at::kFloat).contiguous().cpu();
}

void PackedKernelLinear::set_cpu_isa(cpu::CpuIsa isa) {
  if (!cpu::cpu_supports(isa))
    throw Error(describe(), std::string("this CPU does not support ") + cpu::cpu_isa_name(isa));
  isa_ = isa;
  set_int8_decode(want_int8_decode_);
  set_int8_prefill(want_int8_prefill_);
}

void PackedKernelLinear::set_int8_decode(bool on) {
  want_int8_decode_ = on;
  int8_decode_ = on && int8_supported(Kernel::GemvInt8);
  if (int8_decode_) prepare_int8();
}

void PackedKernelLinear::set_int8_prefill(bool on) {
  want_int8_prefill_ = on;
  int8_prefill_ = on && int8_supported(Kernel::GemmInt8);
  if (int8_prefill_) prepare_int8();
}

at::Tensor PackedKernelLinear::forward(const at::Tensor& x) const {
  const bool int4 = decode_activations() == DecodeActivations::Int4PerToken && draft_int4_ && int4_supported();
  const Kernel few_rows = int4 ? Kernel::GemvInt4 : Kernel::Gemv;
  PackedKernels kernels{[&](const float* in, int64_t m, float* y) { return multiply(few_rows, in, m, y); },
                        [&](int64_t row0, int64_t n, float* out) { return dequantize_rows(row0, n, out); },
                        {},
                        {}};
  if (int8_prefill_)
    kernels.many_rows = [&](const float* in, int64_t m, float* y) { return multiply(Kernel::GemmInt8, in, m, y); };
  return packed_forward(x, rows_, cols_, bias_, kernels, describe());
}

void PackedKernelLinear::forward_rows(const float* x, int64_t m, float* y) const {
  Kernel kernel = int8_decode_ ? Kernel::GemvInt8 : Kernel::Gemv;
  if (decode_activations() == DecodeActivations::Int4PerToken && draft_int4_ && int4_supported())
    kernel = Kernel::GemvInt4;
  check_kernel_status(multiply(kernel, x, m, y), describe());
  add_bias(m, y);
}

void PackedKernelLinear::add_bias(int64_t m, float* y) const {
  add_bias_rows(bias_ ? bias_->data_ptr<float>() : nullptr, m, rows_, y);
}

}  // namespace fsq
