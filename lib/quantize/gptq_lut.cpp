#include "quantize/gptq_lut.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quantize/squeezellm/lut_quantizer.h"

namespace fsq {
namespace {

// Rows coded together: each row of U is read once per tile instead of once per row.
constexpr int64_t kRowTile = 16;

double reconstruction_loss(const LutMatrix& m, const float* w, const at::Tensor& hessian) {
  at::Tensor deq = at::empty({m.rows, m.cols}, at::kFloat);
  dequantize_lut(m, deq.data_ptr<float>());
  const at::Tensor original = at::from_blob(const_cast<float*>(w), {m.rows, m.cols}, at::kFloat);
  return gptq_loss(original, deq, hessian);
}

}  // namespace

LutGptqStats gptq_assign_lut(LutMatrix& m, const float* w, const at::Tensor& hessian, const std::string& where,
                             double damp) {
  validate_lut_matrix(m, where);
  const int64_t rows = m.rows, cols = m.cols, k = m.levels();
  if (hessian.dim() != 2 || hessian.size(0) != cols || hessian.size(1) != cols)
    throw Error(where, "GPTQ Hessian does not match the weight's " + std::to_string(cols) + " input columns");
  if (!at::isfinite(hessian).all().item<bool>()) throw Error(where, "GPTQ Hessian is not all finite");
  LutGptqStats stats;
  stats.loss_nearest = reconstruction_loss(m, w, hessian);

  // Columns in order of decreasing H diagonal (GPTQ's "act order"): the inputs that carry the
  // most energy are coded first, while every later column can still absorb their error.
  // Free here: a LUT row has no groups whose parameters would depend on the order.
  const at::Tensor h = hessian.to(at::kDouble);
  const at::Tensor diagonal = h.diagonal().contiguous();
  const double* energy = diagonal.data_ptr<double>();
  std::vector<int64_t> perm(cols);
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return energy[a] > energy[b]; });
  const at::Tensor order = at::from_blob(perm.data(), {cols}, at::kLong);
  const at::Tensor U = gptq_inverse_hessian_factor(h.index_select(0, order).index_select(1, order), damp).contiguous();
  const float* u = U.data_ptr<float>();
  std::vector<int64_t> overflow(rows, -1);  // per row: a sparse column whose difference overflows fp16

#pragma omp parallel
  {
    std::vector<float> tile(kRowTile * cols), err(kRowTile);
    std::vector<squeezellm::RowCentroids> centroids(kRowTile);
    // The tile's (row, column) -> index into the CSR arrays, -1 for a dense weight.
    std::vector<int32_t> sparse_index(m.has_sparse() ? kRowTile * cols : 0, -1);
#pragma omp for schedule(dynamic, 1)
    for (int64_t r0 = 0; r0 < rows; r0 += kRowTile) {
      const int64_t nr = std::min(kRowTile, rows - r0);
      if (m.has_sparse()) {
        std::fill(sparse_index.begin(), sparse_index.end(), -1);
        for (int64_t t = 0; t < nr; ++t)
          for (int32_t i = m.row_ptr[r0 + t]; i < m.row_ptr[r0 + t + 1]; ++i) sparse_index[t * cols + m.col[i]] = i;
      }
      for (int64_t t = 0; t < nr; ++t)
        for (int64_t j = 0; j < cols; ++j) tile[t * cols + j] = w[(r0 + t) * cols + perm[j]];
      for (int64_t t = 0; t < nr; ++t)
        centroids[t] = squeezellm::RowCentroids(m.lut.data() + (r0 + t) * k, static_cast<int>(k));
      for (int64_t j = 0; j < cols; ++j) {
        const float pivot = u[j * cols + j];
        for (int64_t t = 0; t < nr; ++t) {
          const int64_t r = r0 + t;
          const float x = tile[t * cols + j];
          const int q = centroids[t].nearest(x);  // the rule quantize_lut codes by
          const int64_t c = perm[j];               // the column in w
          m.codes[r * cols + c] = static_cast<uint8_t>(q);
          float deq = centroids[t].value(q);
          if (!sparse_index.empty() && sparse_index[t * cols + c] >= 0) {
            const uint16_t v = f32_to_f16(x - centroids[t].value(q));
            if (!std::isfinite(f16_to_f32(v)) && overflow[r] < 0) overflow[r] = c;
            m.val[sparse_index[t * cols + c]] = v;
            deq += f16_to_f32(v);
          }
          err[t] = (x - deq) / pivot;
        }
        // The later columns (in GPTQ's order) of these rows absorb column j's error.
        const float* uj = u + j * cols;
        for (int64_t t = 0; t < nr; ++t) {
          float* row = tile.data() + t * cols;
          const float e = err[t];
          if (e == 0) continue;
          for (int64_t c = j + 1; c < cols; ++c) row[c] -= e * uj[c];
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    if (overflow[r] >= 0)
      throw Error(where, "sparse value at row " + std::to_string(r) + ", column " + std::to_string(overflow[r]) +
                             " overflows fp16 after GPTQ's updates");
  stats.loss_gptq = reconstruction_loss(m, w, hessian);
  return stats;
}

}  // namespace fsq
