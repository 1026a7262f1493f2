#include "quantize/squeezellm/dense_sparse.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace fsq::squeezellm {
namespace {

constexpr int kRadixBins = 1 << 16;

// Non-negative finite floats compare like their bit patterns; -0 counts as +0.
inline uint32_t fisher_key(float f) {
  if (f == 0.0f) return 0;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// The `count`-th largest key's high (shift 16) or low half among keys whose high half is
// `high` (when low pass); `above` in: keys already known to be larger, out: keys larger
// than the returned bin.
int select_bin(const std::vector<int64_t>& hist, int64_t count, int64_t& above) {
  for (int b = kRadixBins - 1; b >= 0; --b) {
    if (above + hist[b] >= count) return b;
    above += hist[b];
  }
  return 0;  // unreachable for count <= total
}

}  // namespace

int64_t outliers_per_side(int64_t cols, double outlier_pct) {
  const auto t = static_cast<int64_t>(std::floor(static_cast<double>(cols) * outlier_pct / 200.0 + 0.5));
  return std::clamp<int64_t>(t, 0, cols / 2);
}

int64_t sensitive_count(int64_t rows, int64_t cols, double sensitive_pct) {
  const double n = static_cast<double>(rows) * static_cast<double>(cols);
  const auto s = static_cast<int64_t>(std::floor(n * sensitive_pct / 100.0 + 0.5));
  return std::clamp<int64_t>(s, 0, rows * cols);
}

std::vector<int32_t> row_outlier_columns(const float* row, int64_t cols, int64_t per_side) {
  std::vector<uint64_t> keys(cols);
  for (int64_t c = 0; c < cols; ++c) {
    uint32_t bits;
    std::memcpy(&bits, &row[c], sizeof bits);
    keys[c] = static_cast<uint64_t>(orderable_bits(bits)) << 32 | static_cast<uint64_t>(c);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int32_t> out;
  for (int64_t i = 0; i < cols; ++i)
    if (i < per_side || i >= cols - per_side) out.push_back(static_cast<int32_t>(keys[i] & 0xffffffffu));
  std::sort(out.begin(), out.end());
  return out;
}

SparsePattern select_sensitive(const float* fisher, int64_t rows, int64_t cols, int64_t count) {
  SparsePattern s;
  s.row_ptr.assign(rows + 1, 0);
  if (count <= 0) return s;
  const int64_t total = rows * cols;

  // Radix select of the count-th largest key T: high 16 bits, then low 16 bits.
  std::vector<int64_t> hist(kRadixBins, 0);
  {
    int64_t* h = hist.data();
#pragma omp parallel for reduction(+ : h[:kRadixBins]) schedule(static)
    for (int64_t i = 0; i < total; ++i) ++h[fisher_key(fisher[i]) >> 16];
  }
  int64_t above = 0;
  const uint32_t high = static_cast<uint32_t>(select_bin(hist, count, above));
  std::fill(hist.begin(), hist.end(), 0);
  {
    int64_t* h = hist.data();
#pragma omp parallel for reduction(+ : h[:kRadixBins]) schedule(static)
    for (int64_t i = 0; i < total; ++i) {
      const uint32_t key = fisher_key(fisher[i]);
      if (key >> 16 == high) ++h[key & 0xffffu];
    }
  }
  const uint32_t threshold = high << 16 | static_cast<uint32_t>(select_bin(hist, count, above));
  // `above` keys are > threshold; the rest come from ties, earliest in row-major order.
  std::vector<int64_t> greater(rows, 0), ties(rows, 0);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t key = fisher_key(fisher[r * cols + c]);
      greater[r] += key > threshold;
      ties[r] += key == threshold;
    }
  }
  int64_t tie_quota = count - above;
  std::vector<int64_t> take(rows, 0);
  for (int64_t r = 0; r < rows; ++r) {
    take[r] = std::min(ties[r], tie_quota);
    tie_quota -= take[r];
    s.row_ptr[r + 1] = s.row_ptr[r] + greater[r] + take[r];
  }
  s.col.resize(s.row_ptr[rows]);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t out = s.row_ptr[r], taken = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t key = fisher_key(fisher[r * cols + c]);
      if (key > threshold || (key == threshold && taken < take[r])) {
        taken += key == threshold;
        s.col[out++] = static_cast<int32_t>(c);
      }
    }
  }
  return s;
}

}  // namespace fsq::squeezellm
