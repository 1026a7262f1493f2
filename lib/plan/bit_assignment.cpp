#include "plan/bit_assignment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "plan/solvers.h"

namespace fsq::plan {

const std::vector<int>& assignable_widths() {
  static const std::vector<int> widths = {2, 3, 4, 8, 16};
  return widths;
}

void check_widths(const std::vector<int>& widths, const std::vector<int>& allowed) {
  std::string names;
  for (int b : allowed) names += (names.empty() ? "" : ", ") + std::to_string(b);
  if (widths.empty()) throw Error("--bits", "no widths given; choose from " + names);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (std::find(allowed.begin(), allowed.end(), widths[i]) == allowed.end())
      throw Error("--bits", "width " + std::to_string(widths[i]) + " is not one of " + names);
    if (i > 0 && widths[i] <= widths[i - 1]) throw Error("--bits", "widths must be given in increasing order, each once");
  }
}

void check_omega(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                 const std::vector<int>& widths, const std::string& source) {
  if (omega.empty() || (!params.empty() && params.size() != omega.size())) throw Error(source, "omega and weights must cover every layer");
  for (size_t l = 0; l < omega.size(); ++l) {
    if (omega[l].size() != widths.size())
      throw Error(source, "layer " + std::to_string(l) + " has " + std::to_string(omega[l].size()) +
                              " omega values for " + std::to_string(widths.size()) + " widths");
    for (size_t w = 0; w < widths.size(); ++w)
      if (!(std::isfinite(omega[l][w]) && omega[l][w] >= 0))
        throw Error(source, "layer " + std::to_string(l) + "'s omega at " + std::to_string(widths[w]) + " bits is " +
                                std::to_string(omega[l][w]) + ", not a finite number >= 0");
    if (!params.empty() && !(std::isfinite(params[l]) && params[l] > 0))
      throw Error(source, "layer " + std::to_string(l) + " has " + std::to_string(params[l]) + " weights");
  }
}

BitAssignment assign_bits(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                          const std::vector<int>& widths, double target_bits, double time_limit_s) {
  check_widths(widths, assignable_widths());
  if (params.size() != omega.size()) throw Error("plan", "omega and weights must cover every layer");
  check_omega(omega, params, widths, "plan");
  const int L = static_cast<int>(omega.size()), W = static_cast<int>(widths.size());
  if (!std::isfinite(target_bits)) throw Error("--target-bits", "expected a finite number of bits");
  if (target_bits < *std::min_element(widths.begin(), widths.end())) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%.3g is below the smallest width (%d)", target_bits,
                  *std::min_element(widths.begin(), widths.end()));
    throw Error("--target-bits", msg);
  }
  // One stage that holds everything and takes no time: only omega and the budget matter.
  PlanProblem p;
  p.groups = L;
  p.stages = 1;
  p.widths = widths;
  p.group_layers.assign(L, 1);
  p.group_params = params;
  p.bytes.assign(static_cast<size_t>(L) * W, 0);
  p.prefill_s = p.bytes;
  p.decode_s = p.bytes;
  p.omega.resize(static_cast<size_t>(L) * W);
  for (int l = 0; l < L; ++l)
    for (int w = 0; w < W; ++w) p.omega[p.omega_at(l, w)] = omega[l][w];
  p.stage = {StageFixed{1, 0, 0, 0}};
  p.latency_weight = 0;
  // Objective omega / max omega: the same argmin, with coefficients near 1 for CBC.
  double largest = 0;
  for (double o : p.omega) largest = std::max(largest, o);
  p.theta = largest > 0 ? 1 / largest : 1;
  p.avg_bits_cap = target_bits;
  Solution s = solve_ilp(p, time_limit_s);
  BitAssignment out;
  out.found = s.found;
  out.status = s.status;
  out.seconds = s.seconds;
  if (!s.found) return out;
  for (int l = 0; l < L; ++l) out.bits.push_back(widths[s.assignment.width[l]]);
  out.avg_bits = s.eval.avg_bits;
  out.omega = s.eval.omega;
  return out;
}

double uniform_omega(const std::vector<std::vector<double>>& omega, size_t w) {
  double sum = 0;
  for (const auto& layer : omega) sum += layer[w];
  return sum;
}

}  // namespace fsq::plan
