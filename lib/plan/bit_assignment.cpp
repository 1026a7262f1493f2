#include "plan/bit_assignment.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "plan/solvers.h"

namespace fsq::plan {

BitAssignment assign_bits(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                          const std::vector<int>& widths, double target_bits, double time_limit_s) {
  const int L = static_cast<int>(omega.size()), W = static_cast<int>(widths.size());
  if (L == 0 || static_cast<int>(params.size()) != L) throw Error("plan", "omega and weights must cover every layer");
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
