// Three ways to solve a PlanProblem: the ILP (COIN-OR CBC), the bitwidth-transfer local
// search (fast, no optimality proof), and brute force (tests and tiny instances).
#pragma once

#include "plan/plan_problem.h"

namespace fsq::plan {

// The paper's ILP: binaries z[g][j][w] (group g on stage j at width w), two continuous
// variables for the slowest stage's prefill and decode time, contiguity as prefix-sum
// monotonicity of the stage choice. `warm_start` (may be null) seeds CBC. Status
// "optimal" when CBC proved it, "time limit" when it stopped with a solution,
// "infeasible" when it proved none exists, "no solution" otherwise.
Solution solve_ilp(const PlanProblem& p, double time_limit_s, const Assignment* warm_start = nullptr);

// Bitwidth-transfer local search: from DP splits with one width per stage (the sum terms
// exact, the slowest stage capped) and from even and capacity-proportional splits at each
// width, shift groups between neighbouring stages, change one group's width, or move bits
// from one group to another while the (violation, objective) pair improves. Deterministic.
Solution solve_heuristic(const PlanProblem& p);

// Every contiguous partition times every width per group. Throws fsq::Error when that is
// more than `max_candidates` assignments.
Solution solve_exhaustive(const PlanProblem& p, double max_candidates = 2e7);

}  // namespace fsq::plan
