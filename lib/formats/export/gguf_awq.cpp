#include "formats/export/gguf_awq.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/quantize_blocks.h"

namespace fsq {
namespace {

constexpr int kAlphaGrid = 10;       // alpha = 0, 0.1, ..., 0.9
constexpr int64_t kSearchRows = 256;  // rows per matrix the search scores (evenly strided)

struct Group {
  std::string norm;
  std::vector<std::string> linears;
};

std::vector<Group> norm_fed_groups(const GgufExportSource& source) {
  std::vector<Group> groups;
  for (int64_t layer = 0;; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    if (source.find_tensor(p + "attn_norm.weight") == nullptr) break;
    groups.push_back({p + "attn_norm.weight", {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}});
    groups.push_back({p + "ffn_norm.weight", {p + "ffn_gate.weight", p + "ffn_up.weight"}});
  }
  return groups;
}

GgmlType planned_type(const GgufExportPlan& plan, const std::string& name) {
  for (const auto& t : plan.tensors)
    if (t.name == name) return t.to;
  return GgmlType::F32;
}

// s_j = m_j^alpha / sqrt(max * min) over the group's columns (alpha = 0: all ones).
std::vector<float> scales_for(const std::vector<float>& magnitude, double alpha) {
  std::vector<float> s(magnitude.size());
  float lo = 0, hi = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    s[j] = static_cast<float>(std::pow(std::max(magnitude[j], 1e-6f), alpha));
    lo = j == 0 ? s[j] : std::min(lo, s[j]);
    hi = j == 0 ? s[j] : std::max(hi, s[j]);
  }
  const float norm = std::sqrt(lo * hi);
  for (float& v : s) v /= norm;
  return s;
}

// Diagonal output-error estimate of quantizing `weights` ([rows, cols] f32) scaled by s,
// over an evenly strided subset of at most ~kSearchRows rows (the choice of one alpha per
// group does not need every row; the export then quantizes them all).
double scaled_error(GgmlType type, const std::vector<float>& weights, int64_t cols, const std::vector<float>& c,
                    const std::vector<float>& s, int threads) {
  const int64_t all_rows = static_cast<int64_t>(weights.size()) / cols;
  const int64_t stride = std::max<int64_t>(1, all_rows / kSearchRows);
  const int64_t rows = (all_rows + stride - 1) / stride;
  std::vector<double> partial(static_cast<size_t>(threads), 0.0);
  auto work = [&](int t) {
    std::vector<float> x(static_cast<size_t>(cols)), imp(static_cast<size_t>(cols)), y(static_cast<size_t>(cols));
    std::vector<std::byte> bytes(*ggml_nbytes(type, cols));
    for (int64_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r) {
      const float* w = weights.data() + r * stride * cols;
      for (int64_t j = 0; j < cols; ++j) {
        x[j] = w[j] * s[j];
        imp[j] = c[j] / (s[j] * s[j]);
      }
      quantize_row_gguf(type, x, imp, bytes, y);
      for (int64_t j = 0; j < cols; ++j) {
        double e = static_cast<double>(w[j]) - static_cast<double>(y[j]) / s[j];
        partial[static_cast<size_t>(t)] += c[j] * e * e;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  double total = 0;
  for (double p : partial) total += p;  // fixed order: the same for every run
  return total;
}

bool quantized(GgmlType t) { return ggml_type_info(t).block_size > 1; }

}  // namespace

GgufAwqScales search_gguf_awq_scales(const GgufExportSource& source, const GgufExportPlan& plan,
                                     const std::function<std::vector<float>(const std::string&, int64_t)>& importance,
                                     int threads, const std::function<void(size_t, size_t)>& progress) {
  GgufAwqScales out;
  const auto groups = norm_fed_groups(source);
  threads = std::max(threads, 1);
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    const GgufSourceTensor* norm = source.find_tensor(group.norm);
    const int64_t cols = norm->dims[0];
    std::vector<float> c;
    std::vector<std::pair<GgmlType, std::vector<float>>> mats;  // planned type, dequantized weights
    bool usable = importance != nullptr;
    for (const auto& name : group.linears) {
      const GgufSourceTensor* t = source.find_tensor(name);
      if (t == nullptr || t->carried || t->dims.size() != 2 || t->dims[0] != cols ||
          !quantized(planned_type(plan, name))) {
        usable = false;
        break;
      }
      if (c.empty()) c = importance(name, cols);
      const size_t index = source.tensor_index(name);
      std::vector<float> w(static_cast<size_t>(t->rows() * cols));
      source.open_tensor(index);
      source.read_rows(index, 0, t->rows(), w.data());
      source.release(index);
      mats.emplace_back(planned_type(plan, name), std::move(w));
    }
    if (!usable || static_cast<int64_t>(c.size()) != cols) {
      if (progress) progress(g + 1, groups.size());
      continue;
    }
    std::vector<float> magnitude(c.size());
    for (size_t j = 0; j < c.size(); ++j) magnitude[j] = std::sqrt(c[j]);
    double best_err = 0, base_err = 0, best_alpha = 0;
    for (int k = 0; k < kAlphaGrid; ++k) {
      const double alpha = static_cast<double>(k) / kAlphaGrid;
      const std::vector<float> s = scales_for(magnitude, alpha);
      double err = 0;
      for (const auto& [type, w] : mats) err += scaled_error(type, w, cols, c, s, threads);
      if (k == 0) base_err = best_err = err;
      if (err < best_err) {
        best_err = err;
        best_alpha = alpha;
      }
    }
    out.report.push_back({{"norm", group.norm}, {"alpha", best_alpha}, {"error_unscaled", base_err},
                          {"error", best_err}});
    if (best_alpha > 0) {
      const std::vector<float> s = scales_for(magnitude, best_alpha);
      out.norm_divisor[group.norm] = s;
      for (const auto& name : group.linears) out.column_scale[name] = s;
    }
    if (progress) progress(g + 1, groups.size());
  }
  return out;
}

GgufAwqScales search_gguf_awq_scales(const GgufFile& source, const GgufExportPlan& plan,
                                     const std::function<std::vector<float>(const std::string&, int64_t)>& importance,
                                     int threads, const std::function<void(size_t, size_t)>& progress) {
  return search_gguf_awq_scales(GgufFileSource(source), plan, importance, threads, progress);
}

}  // namespace fsq
