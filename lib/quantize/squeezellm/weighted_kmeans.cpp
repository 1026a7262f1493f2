#include "quantize/squeezellm/weighted_kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace fsq::squeezellm {
namespace {

// Prefix sums over the sorted distinct values: s0[i] = sum_{j<i} F_j, s1 of F x, s2 of F x^2.
struct Prefix {
  std::vector<double> s0, s1, s2;

  Prefix(const double* value, const double* weight, int64_t n) : s0(n + 1, 0.0), s1(n + 1, 0.0), s2(n + 1, 0.0) {
    for (int64_t i = 0; i < n; ++i) {
      const double fx = weight[i] * value[i];
      s0[i + 1] = s0[i] + weight[i];
      s1[i + 1] = s1[i] + fx;
      s2[i + 1] = s2[i] + fx * value[i];
    }
  }
  double weight(int64_t a, int64_t b) const { return s0[b] - s0[a]; }
  double mean(int64_t a, int64_t b) const { return (s1[b] - s1[a]) / (s0[b] - s0[a]); }
  // sum F (x - mean)^2 over [a, b) (weight > 0), clamped at 0 against rounding.
  double cost(int64_t a, int64_t b) const {
    const double w = s0[b] - s0[a], m1 = s1[b] - s1[a];
    return std::max(0.0, (s2[b] - s2[a]) - m1 * m1 / w);
  }
  // sum F (x - c)^2 over [a, b) for any c.
  double cost_at(int64_t a, int64_t b, double c) const {
    const double w = s0[b] - s0[a], m1 = s1[b] - s1[a];
    return std::max(0.0, (s2[b] - s2[a]) - 2.0 * c * m1 + c * c * w);
  }
};

// split[j] for j = 0..k: cluster j is [split[j], split[j + 1]); a value on a midpoint goes
// to the lower centroid (upper_bound).
void assign(const double* value, int64_t n, const std::vector<double>& c, std::vector<int64_t>& split) {
  const int k = static_cast<int>(c.size());
  split.assign(k + 1, 0);
  split[k] = n;
  for (int j = 1; j < k; ++j) {
    const double mid = 0.5 * (c[j - 1] + c[j]);
    split[j] = std::upper_bound(value + split[j - 1], value + n, mid) - value;
  }
}

}  // namespace

std::vector<double> weighted_quantile_centroids(const double* value, const double* weight, int64_t n, int k) {
  std::vector<double> cum(n);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) cum[i] = total += weight[i];
  std::vector<double> c(k);
  for (int j = 0; j < k; ++j) {
    const double target = (j + 0.5) / k * total;
    const int64_t i = std::lower_bound(cum.begin(), cum.end(), target) - cum.begin();
    c[j] = value[std::min(i, n - 1)];
  }
  return c;
}

KMeansResult lloyd_1d_sorted(const double* value, const double* weight, int64_t n, std::vector<double> c,
                            int max_iterations, double tolerance) {
  KMeansResult r;
  const int k = static_cast<int>(c.size());
  std::sort(c.begin(), c.end());
  const Prefix p(value, weight, n);
  std::vector<double> next(k), cost(k);
  std::vector<int64_t> split, lo(k), hi(k);
  std::vector<char> empty(k);
  double prev_objective = std::numeric_limits<double>::infinity();
  r.converged = false;
  for (int it = 1; it <= max_iterations; ++it) {
    r.iterations = it;
    assign(value, n, c, split);
    double objective = 0;
    for (int j = 0; j < k; ++j) {
      lo[j] = split[j];
      hi[j] = split[j + 1];
      empty[j] = !(p.weight(lo[j], hi[j]) > 0);
      if (empty[j]) {
        next[j] = c[j];
        cost[j] = 0;
      } else {
        next[j] = p.mean(lo[j], hi[j]);
        cost[j] = p.cost(lo[j], hi[j]);
        objective += cost[j];
      }
    }
    bool split_any = false;
    for (int e = 0; e < k; ++e) {
      if (!empty[e]) continue;
      int big = -1;
      for (int j = 0; j < k; ++j)
        if (!empty[j] && cost[j] > 0 && (big < 0 || cost[j] > cost[big])) big = j;
      if (big < 0) break;  // nothing to split: the empty clusters keep their centroids
      const int64_t a = lo[big], b = hi[big];
      const int64_t m = std::upper_bound(value + a, value + b, next[big]) - value;
      if (!(p.weight(a, m) > 0) || !(p.weight(m, b) > 0)) {
        cost[big] = 0;  // not splittable (rounding): never pick it again
        --e;
        continue;
      }
      next[big] = p.mean(a, m);
      cost[big] = p.cost(a, m);
      hi[big] = m;
      next[e] = p.mean(m, b);
      cost[e] = p.cost(m, b);
      lo[e] = m;
      hi[e] = b;
      empty[e] = 0;
      split_any = true;
    }
    std::sort(next.begin(), next.end());
    const bool unchanged = next == c;
    c.swap(next);
    const bool small_drop = std::isfinite(prev_objective) && prev_objective - objective <= tolerance * prev_objective;
    prev_objective = objective;
    if (unchanged || objective == 0 || (!split_any && small_drop)) {
      r.converged = true;
      break;
    }
  }
  assign(value, n, c, split);
  r.objective = 0;
  for (int j = 0; j < k; ++j)
    if (split[j + 1] > split[j]) r.objective += p.cost_at(split[j], split[j + 1], c[j]);
  r.centroids = std::move(c);
  return r;
}

KMeansResult kmeans_1d_sorted(const double* value, const double* weight, const double* count, int64_t n, int k,
                              int max_iterations, double tolerance) {
  KMeansResult r;
  if (n == 0) {
    r.centroids.assign(k, 0.0);
    return r;
  }
  if (n <= k) {
    r.centroids.assign(value, value + n);
    r.centroids.resize(k, value[n - 1]);
    return r;
  }
  std::vector<double> ones;
  if (count == nullptr) {
    ones.assign(n, 1.0);
    count = ones.data();
  }
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += weight[i];
  const bool no_weight = !(total > 0);
  if (no_weight) weight = count;
  r = lloyd_1d_sorted(value, weight, n, weighted_quantile_centroids(value, weight, n, k), max_iterations, tolerance);
  if (weight != count) {
    // Second start: plain (count-weighted) Lloyd from the count quantiles, then weighted
    // Lloyd from where it ends. Weighted quantiles crowd the bulk of a heavy-tailed row and
    // Lloyd then leaves heavy tail points on a far centroid; this start can only improve
    // the weighted objective of plain k-means' centroids.
    const KMeansResult plain =
        lloyd_1d_sorted(value, count, n, weighted_quantile_centroids(value, count, n, k), max_iterations, tolerance);
    KMeansResult alt = lloyd_1d_sorted(value, weight, n, plain.centroids, max_iterations, tolerance);
    const int iterations = r.iterations + plain.iterations + alt.iterations;
    const bool converged = r.converged && plain.converged && alt.converged;
    if (alt.objective < r.objective) r = std::move(alt);
    r.iterations = iterations;
    r.converged = converged;
  }
  if (no_weight) r.objective = 0;  // every true weight is 0
  return r;
}

KMeansResult weighted_kmeans_1d(const float* values, const float* weights, int64_t n, int k, int max_iterations,
                                double tolerance) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return values[a] < values[b] || (values[a] == values[b] && a < b);
  });
  std::vector<double> v, w, count;
  for (int64_t i : order) {
    const double f = weights ? weights[i] : 1.0;
    if (!v.empty() && v.back() == static_cast<double>(values[i])) {
      w.back() += f;
      count.back() += 1;
    } else {
      v.push_back(values[i]);
      w.push_back(f);
      count.push_back(1);
    }
  }
  return kmeans_1d_sorted(v.data(), weights ? w.data() : count.data(), count.data(), static_cast<int64_t>(v.size()), k, max_iterations,
                          tolerance);
}

}  // namespace fsq::squeezellm
