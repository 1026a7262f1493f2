#include "runtime/cpu/f32_gemm.h"

#include <oneapi/dnnl/dnnl.h>

namespace fsq::cpu {
namespace {

bool valid_matrix(const void* p, int64_t rows, int64_t cols, int64_t stride) {
  return p != nullptr && rows > 0 && cols > 0 && stride >= cols;
}

KernelStatus sgemm(char trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc) {
  const dnnl_status_t s = dnnl_sgemm('N', trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  return s == dnnl_success ? KernelStatus::Ok : KernelStatus::InvalidArgument;
}

}  // namespace

KernelStatus f32_gemm_xwt(const float* x, int64_t m, int64_t cols, int64_t x_stride, const float* w, int64_t rows,
                          int64_t w_stride, float* y, int64_t y_stride) {
  if (!valid_matrix(x, m, cols, x_stride) || !valid_matrix(w, rows, cols, w_stride) || !valid_matrix(y, m, rows, y_stride))
    return KernelStatus::InvalidArgument;
  return sgemm('T', m, rows, cols, x, x_stride, w, w_stride, y, y_stride);
}

KernelStatus f32_gemm_ab(const float* a, int64_t m, int64_t inner, int64_t a_stride, const float* b, int64_t n,
                         int64_t b_stride, float* y, int64_t y_stride) {
  if (!valid_matrix(a, m, inner, a_stride) || !valid_matrix(b, inner, n, b_stride) || !valid_matrix(y, m, n, y_stride))
    return KernelStatus::InvalidArgument;
  return sgemm('N', m, n, inner, a, a_stride, b, b_stride, y, y_stride);
}

}  // namespace fsq::cpu
