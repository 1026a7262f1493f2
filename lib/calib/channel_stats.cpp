#include "calib/channel_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace fsq {

ChannelStats::ChannelStats(int64_t channels)
    : sum_(static_cast<size_t>(channels), 0.0),
      sumsq_(static_cast<size_t>(channels), 0.0),
      absmax_(static_cast<size_t>(channels), 0.0f) {}

void ChannelStats::add_rows(const float* x, int64_t rows) {
  const size_t c = absmax_.size();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + static_cast<size_t>(r) * c;
    for (size_t j = 0; j < c; ++j) {
      const double v = row[j];
      sum_[j] += v;
      sumsq_[j] += v * v;
      absmax_[j] = std::max(absmax_[j], std::fabs(row[j]));
    }
  }
  count_ += rows;
}

void ChannelStats::merge(const ChannelStats& other) {
  if (other.channels() != channels())
    throw Error("channel statistics", "cannot merge accumulators of different widths",
                std::to_string(channels()), std::to_string(other.channels()));
  for (size_t j = 0; j < absmax_.size(); ++j) {
    sum_[j] += other.sum_[j];
    sumsq_[j] += other.sumsq_[j];
    absmax_[j] = std::max(absmax_[j], other.absmax_[j]);
  }
  count_ += other.count_;
}

std::vector<float> ChannelStats::mean() const {
  std::vector<float> out(sum_.size(), 0.0f);
  if (count_ == 0) return out;
  for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<float>(sum_[j] / static_cast<double>(count_));
  return out;
}

std::vector<float> ChannelStats::sqmean() const {
  std::vector<float> out(sumsq_.size(), 0.0f);
  if (count_ == 0) return out;
  for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<float>(sumsq_[j] / static_cast<double>(count_));
  return out;
}

}  // namespace fsq
