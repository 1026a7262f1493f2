// fsq plan without a cluster: per-layer widths that minimize summed omega at an average-bits
// budget (a knapsack, solved exactly by the ILP with one stage and no latency term).
#pragma once

#include <string>
#include <vector>

namespace fsq::plan {

struct BitAssignment {
  bool found = false;
  std::string status;
  std::vector<int> bits;  // per layer
  double avg_bits = 0;    // weighted by each layer's weights; code bits only (no scales)
  double omega = 0;
  double seconds = 0;
};

// omega[layer][w] for widths[w]; params[layer] weights per layer. Throws fsq::Error when the
// budget is below the smallest width.
BitAssignment assign_bits(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                          const std::vector<int>& widths, double target_bits, double time_limit_s);

// Every layer at widths[w]: summed omega.
double uniform_omega(const std::vector<std::vector<double>>& omega, size_t w);

}  // namespace fsq::plan
