// Per-channel activation statistics: absmax, mean and mean of squares over tokens.
// Sums are kept in double and rows are added in order, so a run is deterministic; two
// accumulators merge exactly up to the order of the (fixed) float summation.
#pragma once

#include <cstdint>
#include <vector>

namespace fsq {

class ChannelStats {
 public:
  ChannelStats() = default;
  explicit ChannelStats(int64_t channels);

  // x: `rows` rows of `channels` contiguous floats (one row per token).
  void add_rows(const float* x, int64_t rows);
  // Adds another accumulator over the same channels (shards, threads, files).
  void merge(const ChannelStats& other);

  int64_t channels() const { return static_cast<int64_t>(absmax_.size()); }
  int64_t count() const { return count_; }  // tokens seen
  const std::vector<float>& absmax() const { return absmax_; }
  std::vector<float> mean() const;
  std::vector<float> sqmean() const;  // mean of x^2; variance = sqmean - mean^2

 private:
  int64_t count_ = 0;
  std::vector<double> sum_;
  std::vector<double> sumsq_;
  std::vector<float> absmax_;
};

}  // namespace fsq
