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

// The widths a per-layer assignment may choose from: those fsq quantize --plan writes.
const std::vector<int>& assignable_widths();

// Throws fsq::Error naming --bits unless `widths` is non-empty, increasing (each width once)
// and each one of `allowed`. Every width the planners see passes here first: a width of 0
// made an infinite omega that aborted the solver.
void check_widths(const std::vector<int>& widths, const std::vector<int>& allowed);

// Throws fsq::Error(source, ...) naming the layer and width unless omega[layer] has one value
// per width, params one per layer (or is empty: not checked), and every value is a finite number >= 0 (NaN, Inf or
// negative statistics in a calibration file end up here).
void check_omega(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                 const std::vector<int>& widths, const std::string& source);

// omega[layer][w] for widths[w]; params[layer] weights per layer. Throws fsq::Error when the
// budget is not a number or below the smallest width, or as check_widths (assignable_widths)
// and check_omega do.
BitAssignment assign_bits(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                          const std::vector<int>& widths, double target_bits, double time_limit_s);

// Every layer at widths[w]: summed omega.
double uniform_omega(const std::vector<std::vector<double>>& omega, size_t w);

}  // namespace fsq::plan
