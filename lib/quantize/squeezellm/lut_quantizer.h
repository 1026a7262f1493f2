// SqueezeLLM (Kim et al. 2023, "SqueezeLLM: Dense-and-Sparse Quantization") on one weight
// matrix: the dense-and-sparse split (dense_sparse.h), then per row a Fisher-weighted 1-D
// k-means with 2^bits centroids over the dense values (weighted_kmeans.h). Output: a
// LutMatrix as specified in formats/quant/lut_quant.h.
//
// Per row r:
//   - the sparse positions (outliers of the row and the matrix's most sensitive weights,
//     dense_sparse.h) are left out of the k-means;
//   - k-means on the dense values with weights F = fisher (options.weighted) or 1, to at
//     most max_iterations Lloyd iterations (tolerance: relative drop of the objective);
//     a row whose dense Fisher is all zero falls back to weights 1 (weighted_kmeans.h);
//   - lut[r] = the centroids rounded to fp16, ascending;
//   - every weight (dense or sparse) gets the code of the nearest fp16 centroid (ties: the
//     lower code), so the error measured is the error stored;
//   - a sparse weight stores val = f16(w - lut[r, q]) (float subtraction), so it
//     dequantizes to w up to one fp16 rounding of the difference.
// The sparse part is present iff at least one value is kept (never with dense_only, nor
// with outlier_pct == sensitive_pct == 0, nor when the counts round to 0).
// Rows run in parallel (OpenMP); the result and the stats are bit-identical for any
// thread count.
#pragma once

#include <cstdint>
#include <string>

#include "formats/quant/lut_quant.h"

namespace fsq::squeezellm {

struct LutOptions {
  int bits = 4;                 // 3 or 4
  double outlier_pct = 0.40;    // % of each row's values kept sparse: the outlier_pct / 2 % smallest
                                // and as many largest (dense_sparse.h: outliers_per_side)
  double sensitive_pct = 0.05;  // % of the matrix's largest-Fisher values kept sparse
  bool dense_only = false;      // no sparse part at all
  bool weighted = true;         // Fisher-weighted k-means; false = plain (the --unweighted ablation)
  int max_iterations = 50;      // >= 1, per Lloyd run (a row runs up to three, weighted_kmeans.h).
                                // Heavy-tailed rows creep: on bench_lut_quantize's Student-t
                                // 4096 x 11008 every 4-bit row hits 50 (weighted error +1.4 %
                                // over 300, where none does; about +30 % time)
  double tolerance = 1e-6;      // >= 0: stop when the relative drop of the objective is below this
};

// One row's fp16 centroids as floats and the rule every weight of the row is coded by: the
// nearest centroid, a value on a midpoint taking the lower code. quantize_lut and GPTQ's
// codes (quantize/gptq_lut.h) both code through it, so they agree bit for bit.
class RowCentroids {
 public:
  RowCentroids() = default;
  RowCentroids(const uint16_t* lut_row, int levels);  // levels <= 16
  int nearest(float x) const;
  float value(int code) const { return centroid_[code]; }

 private:
  int levels_ = 0;
  float centroid_[16] = {};
  double mid_[15] = {};  // mid_[q] between centroids q and q + 1, in double (exact)
};

struct LutStats {
  int64_t nnz = 0;                   // sparse values kept
  double weighted_error = 0;         // sum F (w - w')^2 over the matrix (F = 1 when no Fisher)
  double squared_error = 0;          // sum (w - w')^2
  int64_t rows_hit_iteration_cap = 0;
};

// w and fisher are row-major [rows, cols]; fisher may be nullptr only when !weighted and the
// sensitive part is off (dense_only or sensitive_pct == 0) -- otherwise throws
// fsq::Error(where, ...). Also throws fsq::Error(where, ...) on bad options (bits not 3/4,
// a percentage negative, above 100 or not finite, max_iterations < 1, tolerance negative or
// not finite), an empty shape, cols above INT32_MAX, w null, a non-finite w or one outside
// the fp16 range, a negative or non-finite Fisher value, more than INT32_MAX sparse values,
// or a sparse difference overflowing fp16. `stats` may be nullptr. w' in the stats is the
// dequantized value (dequantize_lut).
LutMatrix quantize_lut(const float* w, const float* fisher, int64_t rows, int64_t cols, const LutOptions& options,
                       LutStats* stats, const std::string& where);

}  // namespace fsq::squeezellm
