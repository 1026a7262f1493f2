// GPTQ's error feedback (gptq.h) for SqueezeLLM's lookup-table linears: the per-row
// centroids stay as the Fisher-weighted k-means placed them, but the codes are chosen one
// input column at a time on the weights as GPTQ has updated them, each column's rounding
// error spread over the columns not yet coded through the inverse Hessian's Cholesky factor.
// The sparse part keeps its positions; a sparse weight stores its updated value exactly (up
// to fp16 rounding of the difference), so it absorbs the earlier columns' errors for free.
// With H diagonal nothing is spread: codes and sparse values equal quantize_lut's bit for bit.
#pragma once

#include <ATen/core/Tensor.h>

#include "formats/quant/lut_quant.h"
#include "quantize/gptq.h"

namespace fsq {

struct LutGptqStats {
  double loss_nearest = 0;  // trace(dW H dW^T) of the codes given (nearest centroids)
  double loss_gptq = 0;     // the same after GPTQ's codes
};

// m: quantize_lut's result for the row-major weights w [m.rows, m.cols]; hessian [cols,
// cols] from gptq_hessian over the linear's calibration inputs. Rewrites m.codes and m.val
// in place. Rows are independent (OpenMP over row tiles): bit-identical for any thread
// count. Throws fsq::Error(where, ...) on a Hessian of the wrong shape or not finite, or a
// sparse value that overflows fp16.
LutGptqStats gptq_assign_lut(LutMatrix& m, const float* w, const at::Tensor& hessian, const std::string& where,
                             double damp = GptqOptions{}.damp);

}  // namespace fsq
