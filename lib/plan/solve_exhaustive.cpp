#include <chrono>
#include <cmath>

#include "common/error.h"
#include "plan/solvers.h"

namespace fsq::plan {

namespace {

struct ExhaustiveSearch {
  const PlanProblem& p;
  Assignment cur;
  Solution best;

  void visit(int g) {
    if (g == p.groups) {
      Evaluation e = evaluate(p, cur);
      if (e.feasible && (!best.found || e.objective < best.eval.objective)) {
        best.found = true;
        best.assignment = cur;
        best.eval = e;
      }
      return;
    }
    for (int j = g == 0 ? 0 : cur.stage[g - 1]; j < p.stages; ++j)
      for (int w = 0; w < p.num_widths(); ++w) {
        cur.stage[g] = j;
        cur.width[g] = w;
        visit(g + 1);
      }
  }
};

}  // namespace

Solution solve_exhaustive(const PlanProblem& p, double max_candidates) {
  auto t0 = std::chrono::steady_clock::now();
  // Monotone stage sequences: C(G + S - 1, S - 1); widths: W^G.
  double sequences = 1;
  for (int k = 1; k < p.stages; ++k) sequences = sequences * (p.groups + k) / k;
  double count = sequences * std::pow(static_cast<double>(p.num_widths()), p.groups);
  if (count > max_candidates)
    throw Error("exhaustive planner", "instance has " + std::to_string(count) + " assignments, more than the limit");
  ExhaustiveSearch s{p, {std::vector<int>(p.groups), std::vector<int>(p.groups)}, {}};
  s.visit(0);
  s.best.status = s.best.found ? "optimal" : "infeasible";
  s.best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s.best;
}

}  // namespace fsq::plan
