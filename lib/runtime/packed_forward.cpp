#include "runtime/packed_forward.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/error.h"
#include "runtime/cpu/f32_gemm.h"

namespace fsq {
namespace {

// Weight rows dequantized per GEMM on the prefill path: as many as fit this much f32
// scratch (a whole SmolLM2 linear, ~1000 rows of a LLaMA-7B one), and at least 256. Fewer,
// wider GEMMs ran SmolLM2's 128-token prefill ~10% faster than blocks of 256 rows.
constexpr int64_t kPrefillScratchBytes = int64_t{16} << 20;
constexpr int64_t kPrefillMinBlockRows = 256;

void blocked_matmul(const at::Tensor& x2d, at::Tensor& y, int64_t rows, int64_t cols, const PackedKernels& k,
                    const std::string& where) {
  const int64_t fitting = kPrefillScratchBytes / (cols * static_cast<int64_t>(sizeof(float)));
  const int64_t block_rows = std::min(rows, std::max(kPrefillMinBlockRows, fitting));
  at::Tensor scratch = at::empty({block_rows, cols}, x2d.options());
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t n = std::min(block_rows, rows - r0);
    check_kernel_status(k.dequantize_rows(r0, n, scratch.data_ptr<float>()), where);
    // y[:, r0:r0+n] has row stride `rows`: the GEMM writes it in place.
    check_kernel_status(cpu::f32_gemm_xwt(x2d.data_ptr<float>(), x2d.size(0), cols, cols, scratch.data_ptr<float>(), n,
                                          cols, y.data_ptr<float>() + r0, rows),
                        where);
  }
}

}  // namespace

void check_kernel_status(cpu::KernelStatus s, const std::string& where) {
  if (s != cpu::KernelStatus::Ok) throw Error(where, std::string("CPU kernel failed: ") + cpu::kernel_status_message(s));
}

at::Tensor packed_forward(const at::Tensor& x, int64_t rows, int64_t cols, const std::optional<at::Tensor>& bias,
                          const PackedKernels& kernels, const std::string& where) {
  if (!x.device().is_cpu())
    throw Error(where, "input is on " + x.device().str() + "; only the CPU backend exists for now");
  if (!at::isFloatingType(x.scalar_type()) || x.dim() < 1 || x.size(-1) != cols)
    throw Error(where, "input must be floating with last dimension " + std::to_string(cols), std::to_string(cols),
                x.dim() < 1 ? "a scalar" : std::to_string(x.size(-1)));
  const at::Tensor x2d = x.reshape({-1, cols}).to(at::kFloat).contiguous();
  const int64_t m = x2d.size(0);
  at::Tensor y = at::empty({m, rows}, x2d.options());
  if (kernels.matmul)
    check_kernel_status(kernels.matmul(x2d.data_ptr<float>(), m, y.data_ptr<float>()), where);
  else if (m <= cpu::kMaxGemvRows)
    check_kernel_status(kernels.gemv(x2d.data_ptr<float>(), m, y.data_ptr<float>()), where);
  else if (kernels.many_rows)
    check_kernel_status(kernels.many_rows(x2d.data_ptr<float>(), m, y.data_ptr<float>()), where);
  else
    blocked_matmul(x2d, y, rows, cols, kernels, where);
  if (bias) y.add_(*bias);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = rows;
  return y.view(shape).to(x.scalar_type());
}

}  // namespace fsq
