#include "quantize/squeezellm/lut_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quantize/squeezellm/dense_sparse.h"
#include "quantize/squeezellm/weighted_kmeans.h"

namespace fsq::squeezellm {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

void check_pct(double pct, const char* name, const std::string& where) {
  if (!std::isfinite(pct) || pct < 0 || pct > 100)
    throw Error(where, std::string("SqueezeLLM ") + name + " out of range", "a percentage in 0..100",
                std::to_string(pct));
}

void check_inputs(const float* w, const float* fisher, int64_t rows, int64_t cols, const LutOptions& o,
                  const std::string& where) {
  if (!lut_bits_supported(o.bits))
    throw Error(where, "SqueezeLLM code width unsupported", "3 or 4", std::to_string(o.bits));
  check_pct(o.outlier_pct, "outlier percentage", where);
  check_pct(o.sensitive_pct, "sensitive percentage", where);
  if (o.max_iterations < 1)
    throw Error(where, "SqueezeLLM max_iterations too small", ">= 1", std::to_string(o.max_iterations));
  if (!std::isfinite(o.tolerance) || o.tolerance < 0)
    throw Error(where, "SqueezeLLM tolerance out of range", "finite and >= 0", std::to_string(o.tolerance));
  if (rows <= 0 || cols <= 0)
    throw Error(where, "weight shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] is empty");
  if (cols > kMaxInt32) throw Error(where, "too many columns for a LUT matrix", "<= 2^31 - 1", std::to_string(cols));
  if (w == nullptr) throw Error(where, "no weight values given");
  const bool sensitive_on = !o.dense_only && o.sensitive_pct > 0;
  if (fisher == nullptr && (o.weighted || sensitive_on))
    throw Error(where, std::string("SqueezeLLM needs Fisher information for ") +
                           (o.weighted ? "the weighted k-means" : "the sensitive sparse part"));
  const int64_t n = rows * cols;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(f16_to_f32(f32_to_f16(w[i]))))
      throw Error(where, "weight at row " + std::to_string(i / cols) + ", column " + std::to_string(i % cols) +
                             (std::isfinite(w[i]) ? " is outside the fp16 range" : " is not finite"));
  }
  if (fisher == nullptr) return;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(fisher[i]) || fisher[i] < 0)
      throw Error(where, "Fisher value at row " + std::to_string(i / cols) + ", column " + std::to_string(i % cols) +
                             " is " + (std::isfinite(fisher[i]) ? "negative" : "not finite"));
  }
}

struct RowResult {
  std::vector<int32_t> col;
  std::vector<uint16_t> val;
  double weighted_error = 0, squared_error = 0;
  bool capped = false;
  int64_t overflow_col = -1;  // a sparse difference that overflows fp16
};

}  // namespace

RowCentroids::RowCentroids(const uint16_t* lut_row, int levels) : levels_(levels) {
  for (int q = 0; q < levels; ++q) centroid_[q] = f16_to_f32(lut_row[q]);
  for (int q = 0; q + 1 < levels; ++q)
    mid_[q] = 0.5 * (static_cast<double>(centroid_[q]) + static_cast<double>(centroid_[q + 1]));
}

int RowCentroids::nearest(float x) const {
  return static_cast<int>(std::lower_bound(mid_, mid_ + levels_ - 1, static_cast<double>(x)) - mid_);
}

LutMatrix quantize_lut(const float* w, const float* fisher, int64_t rows, int64_t cols, const LutOptions& options,
                       LutStats* stats, const std::string& where) {
  check_inputs(w, fisher, rows, cols, options, where);
  const bool sparse = !options.dense_only;
  const int64_t per_side = sparse ? outliers_per_side(cols, options.outlier_pct) : 0;
  const int64_t n_sensitive = sparse ? sensitive_count(rows, cols, options.sensitive_pct) : 0;
  const SparsePattern sensitive = select_sensitive(fisher, rows, cols, n_sensitive);
  const int k = 1 << options.bits;

  LutMatrix m;
  m.bits = options.bits;
  m.rows = rows;
  m.cols = cols;
  m.codes.resize(rows * cols);
  m.lut.resize(rows * k);
  std::vector<RowResult> out(rows);

#pragma omp parallel
  {
    std::vector<uint64_t> keys(cols);
    std::vector<uint8_t> is_sparse(cols);
    std::vector<double> value, weight, count;
    value.reserve(cols);
    weight.reserve(cols);
    count.reserve(cols);
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; ++r) {
      const float* wr = w + r * cols;
      const float* fr = fisher ? fisher + r * cols : nullptr;
      RowResult& res = out[r];
      for (int64_t c = 0; c < cols; ++c) {
        uint32_t bits;
        std::memcpy(&bits, &wr[c], sizeof bits);
        keys[c] = static_cast<uint64_t>(orderable_bits(bits)) << 32 | static_cast<uint64_t>(c);
      }
      std::sort(keys.begin(), keys.end());
      std::fill(is_sparse.begin(), is_sparse.end(), 0);
      for (int64_t i = 0; i < per_side; ++i) {
        is_sparse[keys[i] & 0xffffffffu] = 1;
        is_sparse[keys[cols - 1 - i] & 0xffffffffu] = 1;
      }
      if (n_sensitive > 0)
        for (int64_t i = sensitive.row_ptr[r]; i < sensitive.row_ptr[r + 1]; ++i) is_sparse[sensitive.col[i]] = 1;

      // The dense values, sorted and merged, with their k-means weights.
      value.clear();
      weight.clear();
      count.clear();
      for (int64_t i = 0; i < cols; ++i) {
        const int64_t c = static_cast<int64_t>(keys[i] & 0xffffffffu);
        if (is_sparse[c]) continue;
        const double f = options.weighted ? fr[c] : 1.0;
        if (!value.empty() && value.back() == static_cast<double>(wr[c])) {
          weight.back() += f;
          count.back() += 1;
        } else {
          value.push_back(wr[c]);
          weight.push_back(f);
          count.push_back(1);
        }
      }
      const KMeansResult km =
          kmeans_1d_sorted(value.data(), options.weighted ? weight.data() : count.data(), count.data(), static_cast<int64_t>(value.size()), k,
                           options.max_iterations, options.tolerance);
      res.capped = !km.converged;
      uint16_t* lut = m.lut.data() + r * k;
      for (int q = 0; q < k; ++q) lut[q] = f32_to_f16(static_cast<float>(km.centroids[q]));
      const RowCentroids centroids(lut, k);

      // Codes: the nearest fp16 centroid.
      uint8_t* codes = m.codes.data() + r * cols;
      for (int64_t c = 0; c < cols; ++c) {
        const float x = wr[c];
        const int q = centroids.nearest(x);
        codes[c] = static_cast<uint8_t>(q);
        float deq = centroids.value(q);
        if (is_sparse[c]) {
          const uint16_t v = f32_to_f16(x - centroids.value(q));
          if (!std::isfinite(f16_to_f32(v)) && res.overflow_col < 0) res.overflow_col = c;
          res.col.push_back(static_cast<int32_t>(c));
          res.val.push_back(v);
          deq += f16_to_f32(v);
        }
        const double err = static_cast<double>(x) - static_cast<double>(deq);
        res.squared_error += err * err;
        res.weighted_error += (fr ? static_cast<double>(fr[c]) : 1.0) * err * err;
      }
    }
  }

  LutStats s;
  int64_t nnz = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const RowResult& res = out[r];
    if (res.overflow_col >= 0)
      throw Error(where, "sparse value at row " + std::to_string(r) + ", column " + std::to_string(res.overflow_col) +
                             " overflows fp16");
    nnz += static_cast<int64_t>(res.col.size());
    s.weighted_error += res.weighted_error;
    s.squared_error += res.squared_error;
    s.rows_hit_iteration_cap += res.capped;
  }
  if (nnz > kMaxInt32)
    throw Error(where, "too many sparse values for a LUT matrix", "<= 2^31 - 1", std::to_string(nnz));
  s.nnz = nnz;
  if (nnz > 0) {
    m.row_ptr.resize(rows + 1);
    m.col.reserve(nnz);
    m.val.reserve(nnz);
    m.row_ptr[0] = 0;
    for (int64_t r = 0; r < rows; ++r) {
      m.col.insert(m.col.end(), out[r].col.begin(), out[r].col.end());
      m.val.insert(m.val.end(), out[r].val.begin(), out[r].val.end());
      m.row_ptr[r + 1] = static_cast<int32_t>(m.col.size());
    }
  }
  if (stats) *stats = s;
  return m;
}

}  // namespace fsq::squeezellm
