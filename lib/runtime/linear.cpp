#include "runtime/linear.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "runtime/cpu/dense_kernels.h"
#include "runtime/cpu/f32_gemm.h"
#include "runtime/packed_forward.h"
#include "runtime/torch_bridge.h"

namespace fsq {

DenseLinear::DenseLinear(at::Tensor weight, std::optional<at::Tensor> bias)
    : weight_(std::move(weight)), bias_(std::move(bias)), isa_(cpu::selected_cpu_isa()) {}

void Linear::forward_rows(const float*, int64_t, float*) const {
  throw Error(describe(), "has no raw-row path (supports_rows() is false)");
}

void add_bias_rows(const float* bias, int64_t m, int64_t rows, float* y) {
  if (bias == nullptr) return;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < rows; ++n) y[i * rows + n] += bias[n];
}

namespace {

bool cpu_contiguous(const at::Tensor& t, c10::ScalarType dtype) {
  return t.device().is_cpu() && t.scalar_type() == dtype && t.is_contiguous();
}

}  // namespace

std::optional<cpu::Dense16WeightsView> DenseLinear::half_view() const {
  if (!weight_.device().is_cpu() || !weight_.is_contiguous() || weight_.dim() != 2) return std::nullopt;
  const auto type = weight_.scalar_type();
  if (type != at::kBFloat16 && type != at::kHalf) return std::nullopt;
  const auto* w = static_cast<const uint16_t*>(weight_.data_ptr());
  const int64_t rows = out_features(), cols = in_features();
  return cpu::Dense16WeightsView{w, rows, cols, cols, type == at::kBFloat16 ? cpu::HalfFormat::BF16 : cpu::HalfFormat::F16};
}

bool DenseLinear::supports_rows() const {
  const bool weight_ok = cpu_contiguous(weight_, at::kFloat) || half_view().has_value();
  return weight_ok && (!bias_ || cpu_contiguous(*bias_, at::kFloat));
}

void DenseLinear::forward_rows(const float* x, int64_t m, float* y) const {
  const int64_t rows = out_features(), cols = in_features();
  if (const auto half = half_view()) {
    check_kernel_status(cpu::dense16_gemv(*half, x, m, cols, y, rows, isa_), describe());
  } else {
    const cpu::DenseWeightsView view{weight_.data_ptr<float>(), rows, cols, cols};
    check_kernel_status(cpu::dense_gemv(view, x, m, cols, y, rows, isa_), describe());
  }
  add_bias_rows(bias_ ? bias_->data_ptr<float>() : nullptr, m, rows, y);
}

at::Tensor DenseLinear::forward(const at::Tensor& x) const {
  // f32 on the CPU without autograd (the Fisher pass differentiates through linears): oneDNN's
  // sgemm (cpu/f32_gemm.h).
  const bool grad = at::GradMode::is_enabled() &&
                    (x.requires_grad() || weight_.requires_grad() || (bias_ && bias_->requires_grad()));
  if (!grad && supports_rows() && x.device().is_cpu() && x.scalar_type() == at::kFloat) {
    const int64_t rows = out_features(), cols = in_features();
    PackedKernels kernels;
    if (const auto half = half_view()) {
      // 16-bit weights as stored: the decode GEMV reads them directly; more rows widen blocks
      // of weight rows for the f32 GEMM, so no f32 copy of the whole matrix ever exists.
      kernels.gemv = [&, half](const float* in, int64_t m, float* y) {
        return cpu::dense16_gemv(*half, in, m, cols, y, rows, isa_);
      };
      kernels.dequantize_rows = [half](int64_t row0, int64_t n, float* out) {
        return cpu::widen_dense16_rows(*half, row0, n, out);
      };
    } else {
      const float* w = weight_.data_ptr<float>();
      kernels.matmul = [&, w](const float* in, int64_t m, float* y) {
        return m == 0 ? cpu::KernelStatus::Ok : cpu::f32_gemm_xwt(in, m, cols, cols, w, rows, cols, y, rows);
      };
    }
    return packed_forward(x, rows, cols, bias_, kernels, describe());
  }
  // Weights may be kept in a narrower dtype than the activations (bf16 weights, f32 compute).
  const at::Tensor w = weight_.scalar_type() == x.scalar_type() ? weight_ : weight_.to(x.scalar_type());
  if (!bias_) return at::linear(x, w);
  const at::Tensor b = bias_->scalar_type() == x.scalar_type() ? *bias_ : bias_->to(x.scalar_type());
  return at::linear(x, w, b);
}

int64_t DenseLinear::in_features() const { return weight_.size(1); }
int64_t DenseLinear::out_features() const { return weight_.size(0); }

std::string DenseLinear::describe() const {
  return "dense " + scalar_type_name(weight_.scalar_type()) + " [" + std::to_string(out_features()) + " x " +
         std::to_string(in_features()) + "]";
}

int64_t DenseLinear::weight_bytes() const {
  int64_t n = weight_.numel() * static_cast<int64_t>(weight_.element_size());
  if (bias_) n += bias_->numel() * static_cast<int64_t>(bias_->element_size());
  return n;
}

LinearDeviceView DenseLinear::device_view() const {
  return LinearDeviceView(&weight_, bias_.has_value());
}

}  // namespace fsq
