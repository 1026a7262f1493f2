#include "runtime/eval/compare.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace fsq {
namespace {

// Rows per double-precision chunk: keeps the temporaries near 64 MiB for any vocabulary.
int64_t chunk_rows(int64_t vocab) {
  constexpr int64_t kChunkBytes = int64_t{64} << 20;
  return std::max<int64_t>(1, kChunkBytes / (vocab * static_cast<int64_t>(sizeof(double)) * 3));
}

void check_rows(const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.sizes() != b.sizes())
    throw Error("compare", "logit rows of the model and the reference differ in shape",
                "two equal [N, V] tensors",
                std::to_string(a.dim()) + "-d vs " + std::to_string(b.dim()) + "-d");
}

}  // namespace

double CompareStats::mean_kl() const {
  if (kl.empty()) return 0.0;
  double s = 0.0;
  for (double v : kl) s += v;
  return s / static_cast<double>(kl.size());
}

double CompareStats::top1_agreement() const {
  return kl.empty() ? 0.0 : static_cast<double>(agree) / static_cast<double>(kl.size());
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

std::vector<double> kl_per_row(const at::Tensor& model_rows, const at::Tensor& ref_rows) {
  check_rows(model_rows, ref_rows);
  const int64_t n = model_rows.size(0);
  const int64_t step = chunk_rows(std::max<int64_t>(1, model_rows.size(1)));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; r += step) {
    int64_t e = std::min(n, r + step);
    at::Tensor lm = at::log_softmax(model_rows.slice(0, r, e).to(at::kDouble), -1);
    at::Tensor lr = at::log_softmax(ref_rows.slice(0, r, e).to(at::kDouble), -1);
    at::Tensor kl = (lr.exp() * (lr - lm)).sum(-1).to(at::kCPU).contiguous();
    const double* p = kl.data_ptr<double>();
    out.insert(out.end(), p, p + (e - r));
  }
  return out;
}

void add_compare(const at::Tensor& model_rows, const at::Tensor& ref_rows, CompareStats& stats) {
  std::vector<double> kl = kl_per_row(model_rows, ref_rows);
  stats.kl.insert(stats.kl.end(), kl.begin(), kl.end());
  at::Tensor same = model_rows.argmax(-1).eq(ref_rows.argmax(-1)).sum().to(at::kCPU);
  stats.agree += same.item<int64_t>();
}

}  // namespace fsq
