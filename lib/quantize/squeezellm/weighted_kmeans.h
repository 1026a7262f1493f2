// Weighted 1-D k-means (SqueezeLLM's per-row non-uniform quantizer): minimizes
//
//   sum_i F_i (x_i - c(x_i))^2,   c(x) = the centroid nearest x,
//
// over k centroids by Lloyd iterations on the sorted distinct values with prefix sums of
// F, F*x and F*x^2. In one dimension the clusters of sorted centroids are contiguous runs
// of the sorted values split at the midpoints between neighbouring centroids, so an
// iteration finds the k - 1 split points by binary search and each cluster's weighted mean
// and cost from the prefix sums: O(k log n) per iteration, O(n log n) for the sort.
//
// Deterministic (no randomness, no dependence on threads):
//   - initialization: centroid j is the smallest distinct value whose cumulative weight
//     reaches (j + 0.5) / k of the total (the weighted (j + 0.5) / k quantile). Lloyd runs
//     from these and, when the weights are not the counts, a second time from the count
//     (unweighted) quantiles; the lower objective wins (ties: the first). Weighted
//     quantiles crowd the bulk of a heavy-tailed row, and Lloyd then leaves heavy tail
//     points on a far centroid (on Student-t rows with planted Fisher the weighted
//     objective came out 2-3x worse than plain k-means' without the second start);
//   - a value exactly on a midpoint goes to the lower centroid;
//   - an empty cluster (no weight) takes half of the costliest cluster (lowest index among
//     equal costs), split at that cluster's weighted mean; when no cluster has positive
//     cost it keeps its previous centroid;
//   - stop when the centroids do not change, the objective is 0, or (no cluster was split
//     in this iteration and) the objective's relative drop is <= tolerance; otherwise after
//     max_iterations (converged = false).
// Special cases: at most k distinct values -> the centroids are those values (objective 0),
// the remaining centroids repeat the largest value; zero total weight -> the counts are the
// weights (the reported objective is 0, as it is whatever the centroids; this keeps them
// useful); no values -> k centroids of 0.
#pragma once

#include <cstdint>
#include <vector>

namespace fsq::squeezellm {

struct KMeansResult {
  std::vector<double> centroids;  // k entries, ascending (non-decreasing)
  double objective = 0;           // sum F (x - nearest centroid)^2 with the final centroids
  int iterations = 0;             // Lloyd iterations run, both starts (0 for the special cases)
  bool converged = true;          // false: a start stopped at max_iterations
};

// The weighted (j + 0.5) / k quantiles of sorted distinct `value` with `weight` (total > 0).
std::vector<double> weighted_quantile_centroids(const double* value, const double* weight, int64_t n, int k);

// Lloyd iterations from `init` (k centroids, any order) on sorted, strictly increasing
// `value` with non-negative finite `weight`, total > 0 (n > 0 entries each).
KMeansResult lloyd_1d_sorted(const double* value, const double* weight, int64_t n, std::vector<double> init,
                             int max_iterations, double tolerance);

// Weighted k-means on sorted, strictly increasing `value` with non-negative finite `weight`
// and the number of merged values behind each `count` (nullptr: 1 each), n entries each;
// k >= 1, max_iterations >= 1, tolerance >= 0. With the special cases and both starts.
KMeansResult kmeans_1d_sorted(const double* value, const double* weight, const double* count, int64_t n, int k,
                              int max_iterations, double tolerance);

// Convenience over arbitrary order: sorts `values` (finite), merges equal values (summing
// their weights; weights == nullptr: all 1) and runs kmeans_1d_sorted.
KMeansResult weighted_kmeans_1d(const float* values, const float* weights, int64_t n, int k, int max_iterations,
                                double tolerance);

}  // namespace fsq::squeezellm
