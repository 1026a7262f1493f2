// The ILP against brute force on random small instances, the heuristic's gap, and the
// evaluator's bookkeeping.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "plan/solvers.h"

namespace fsq::plan {
namespace {

// CBC works to a relative gap of 1e-9 and a feasibility tolerance of ~1e-7 in scaled rows;
// objectives of these instances are O(1..100), so 1e-6 relative is well above its error and
// far below any two distinct assignments' difference (random costs).
constexpr double kObjectiveRel = 1e-6;

// Random costs with a structure like the real ones: fewer bits use less memory, decode gets
// faster, omega grows; devices differ in speed and memory so capacities bind.
PlanProblem random_problem(std::mt19937& rng, int groups, int stages) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  PlanProblem p;
  p.groups = groups;
  p.stages = stages;
  p.widths = {3, 4, 8};
  const int W = 3;
  p.group_layers.assign(groups, 1);
  p.group_params.assign(groups, 1.0);
  p.bytes.resize(static_cast<size_t>(groups) * stages * W);
  p.prefill_s.resize(p.bytes.size());
  p.decode_s.resize(p.bytes.size());
  p.omega.resize(static_cast<size_t>(groups) * W);
  std::vector<double> speed(stages);
  for (double& s : speed) s = u(rng);
  for (int g = 0; g < groups; ++g) {
    double sens = u(rng);
    for (int w = 0; w < W; ++w) {
      p.omega[p.omega_at(g, w)] = sens / (1 << (2 * p.widths[w]));
      for (int j = 0; j < stages; ++j) {
        p.bytes[p.at(g, j, w)] = p.widths[w] * 1e9;
        p.prefill_s[p.at(g, j, w)] = speed[j] * u(rng) * 0.1;
        p.decode_s[p.at(g, j, w)] = speed[j] * p.widths[w] * 0.001 * u(rng);
      }
    }
  }
  double total_min = groups * 3e9, total_max = groups * 8e9;
  p.stage.resize(stages);
  for (int j = 0; j < stages; ++j) {
    // From a little under the all-3-bit total (some instances infeasible) to above all-8-bit.
    std::uniform_real_distribution<double> cap(0.9 * total_min / stages, 1.2 * total_max / stages);
    p.stage[j].capacity_bytes = cap(rng) + 1e9;
    p.stage[j].bytes = j == 0 || j == stages - 1 ? 1e9 : 0;
    p.stage[j].prefill_s = 0.01 * u(rng);
    p.stage[j].decode_s = 0.0001 * u(rng);
  }
  std::uniform_int_distribution<int> mb(1, 8);
  p.prefill_microbatches = mb(rng);
  p.decode_microbatches = mb(rng);
  p.decode_steps = 20;
  p.theta = std::uniform_real_distribution<double>(0, 50)(rng);
  return p;
}

TEST(PlanSolvers, IlpMatchesBruteForceOnRandomSmallInstances) {
  std::mt19937 rng(20261126);
  int feasible = 0, compared = 0;
  double worst_gap = 0;
  for (int trial = 0; trial < 60; ++trial) {
    int groups = 2 + trial % 7;  // 2..8 layers
    int stages = 1 + trial % 3;  // 1..3 devices
    PlanProblem p = random_problem(rng, groups, stages);
    if (trial % 4 == 3) p.omega_cap = 0.5 * groups / 64.0;  // sometimes a quality budget binds
    Solution brute = solve_exhaustive(p);
    Solution ilp = solve_ilp(p, 60);
    ASSERT_EQ(ilp.found, brute.found) << "trial " << trial << " ilp status " << ilp.status;
    if (!brute.found) {
      EXPECT_EQ(ilp.status, "infeasible") << "trial " << trial;
      continue;
    }
    ++feasible;
    EXPECT_EQ(ilp.status, "optimal") << "trial " << trial;
    EXPECT_NEAR(ilp.eval.objective, brute.eval.objective, kObjectiveRel * brute.eval.objective) << "trial " << trial;
    Solution heur = solve_heuristic(p);
    if (heur.found) {
      ++compared;
      EXPECT_GE(heur.eval.objective, brute.eval.objective * (1 - kObjectiveRel)) << "trial " << trial;
      worst_gap = std::max(worst_gap, heur.eval.objective / brute.eval.objective - 1);
    }
  }
  // Most instances must be feasible for the comparison to mean something, and some not.
  EXPECT_GE(feasible, 40);
  EXPECT_LT(feasible, 60);
  std::printf("[ plan ] ILP == brute force on %d feasible instances of 60; heuristic feasible on %d, worst gap %.3f %%\n",
              feasible, compared, 100 * worst_gap);
}

TEST(PlanSolvers, EvaluateAddsStagesAndPipelineTerms) {
  PlanProblem p;
  p.groups = 2;
  p.stages = 2;
  p.widths = {4, 8};
  p.group_layers = {1, 1};
  p.group_params = {1, 3};
  p.bytes.assign(8, 1.0);
  p.prefill_s = {1, 2, 3, 4, 5, 6, 7, 8};  // at(g, j, w) = (g * 2 + j) * 2 + w
  p.decode_s = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
  p.omega = {10, 1, 20, 2};
  p.stage.assign(2, StageFixed{10, 0, 0.5, 0.05});
  p.prefill_microbatches = 3;
  p.decode_microbatches = 2;
  p.decode_steps = 4;
  p.theta = 0.01;
  // Group 0 on stage 0 at 8 bits (2, 0.2), group 1 on stage 1 at 4 bits (7, 0.7).
  Evaluation e = evaluate(p, {{0, 1}, {1, 0}});
  ASSERT_TRUE(e.feasible) << e.violation;
  double pre0 = 0.5 + 2, pre1 = 0.5 + 7, dec0 = 0.05 + 0.2, dec1 = 0.05 + 0.7;
  double latency = pre0 + pre1 + 2 * pre1 + 4 * (dec0 + dec1 + 1 * dec1);
  EXPECT_DOUBLE_EQ(e.latency_s, latency);
  EXPECT_DOUBLE_EQ(e.omega, 1 + 20);
  EXPECT_DOUBLE_EQ(e.avg_bits, (8 * 1 + 4 * 3) / 4.0);
  EXPECT_DOUBLE_EQ(e.objective, latency + 0.01 * 21);
  // Out of order and over memory are both caught.
  EXPECT_FALSE(evaluate(p, {{1, 0}, {0, 0}}).feasible);
  p.stage[1].capacity_bytes = 0.5;
  Evaluation over = evaluate(p, {{0, 1}, {1, 0}});
  EXPECT_FALSE(over.feasible);
  EXPECT_EQ(over.violation, "memory of stage 1");
}

TEST(PlanSolvers, IlpReportsInfeasibleWhenNothingFits) {
  std::mt19937 rng(7);
  PlanProblem p = random_problem(rng, 4, 2);
  for (auto& s : p.stage) s.capacity_bytes = 2e9;  // 4 groups of >= 3e9 bytes cannot fit in 4e9
  EXPECT_EQ(solve_ilp(p, 10).status, "infeasible");
  EXPECT_FALSE(solve_exhaustive(p).found);
  EXPECT_FALSE(solve_heuristic(p).found);
}

}  // namespace
}  // namespace fsq::plan
