// Every input the ILP sees is validated first (issue 58 item 3): a width of 0 or below, an
// unsorted or unknown width, a NaN/Inf/negative omega or a NaN budget is an fsq::Error naming
// the option or layer, never a SIGABRT inside COIN-OR Clp (which asserts |objective| < 1e25).
// Were any of these to reach the solver, the test process would abort and the test fail.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "plan/bit_assignment.h"
#include "plan/plan_problem.h"
#include "plan/solvers.h"

namespace fsq::plan {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// assign_bits throws fsq::Error whose message holds `needle`.
void expect_refused(const std::vector<std::vector<double>>& omega, const std::vector<double>& params,
                    const std::vector<int>& widths, double target, const std::string& needle) {
  try {
    assign_bits(omega, params, widths, target, 10);
    ADD_FAILURE() << "accepted; expected an error with " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// Two layers of 1e6 weights, omega falling with the width.
std::vector<std::vector<double>> omega_for(const std::vector<int>& widths) {
  std::vector<std::vector<double>> omega(2);
  for (auto& layer : omega)
    for (int b : widths) layer.push_back(b >= 16 ? 0.0 : 1.0 / std::ldexp(1.0, b));
  return omega;
}
const std::vector<double> kParams = {1e6, 1e6};

TEST(PlanInputs, WidthsOfZeroNegativeUnsortedOrUnknownAreRefused) {
  for (const std::vector<int>& widths : std::vector<std::vector<int>>{{3, 0}, {0}, {3, -4}, {-1, 4}, {4, 3}, {3, 3},
                                                                        {1, 4}, {3, 7}, {4, 32}, {}}) {
    SCOPED_TRACE(widths.size());
    std::vector<std::vector<double>> omega(2, std::vector<double>(widths.size(), 1.0));
    expect_refused(omega, kParams, widths, 4, "--bits");
  }
  // The widths fsq quantize --plan writes pass.
  const std::vector<int> ok = {2, 3, 4, 8, 16};
  EXPECT_TRUE(assign_bits(omega_for(ok), kParams, ok, 4, 10).found);
  EXPECT_NO_THROW(check_widths({3, 4, 8, 16}, {3, 4, 8, 16}));
  EXPECT_THROW(check_widths({2, 4}, {3, 4, 8, 16}), Error);
}

TEST(PlanInputs, NonFiniteOrNegativeOmegaIsRefusedNamingTheLayer) {
  const std::vector<int> widths = {3, 4};
  for (double bad : {kNaN, kInf, -kInf, -1.0}) {
    auto omega = omega_for(widths);
    omega[1][0] = bad;
    expect_refused(omega, kParams, widths, 3.5, "layer 1's omega at 3 bits");
  }
  auto omega = omega_for(widths);
  expect_refused(omega, {1e6, kNaN}, widths, 3.5, "layer 1");
  expect_refused(omega, {1e6, -5}, widths, 3.5, "layer 1");
  expect_refused(omega, {1e6}, widths, 3.5, "cover every layer");
  expect_refused({{1.0}, {1.0, 2.0}}, kParams, widths, 3.5, "layer 0");
}

TEST(PlanInputs, NonFiniteBudgetIsRefused) {
  const std::vector<int> widths = {3, 4};
  expect_refused(omega_for(widths), kParams, widths, kNaN, "--target-bits");
  expect_refused(omega_for(widths), kParams, widths, kInf, "--target-bits");
}

TEST(PlanInputs, HugeButFiniteOmegaIsScaledAndSolved) {
  const std::vector<int> widths = {3, 4};
  auto omega = omega_for(widths);
  for (auto& layer : omega)
    for (double& o : layer) o *= 1e300;
  const BitAssignment a = assign_bits(omega, kParams, widths, 4, 10);
  EXPECT_TRUE(a.found) << a.status;
}

// The solver's own guard: a problem built without the checks above never reaches Clp.
TEST(PlanInputs, SolverRefusesANonFiniteObjectiveInsteadOfAborting) {
  PlanProblem p;
  p.groups = 2;
  p.stages = 1;
  p.widths = {3, 4};
  p.group_layers = {1, 1};
  p.group_params = {1e6, 1e6};
  p.bytes.assign(4, 0);
  p.prefill_s = p.bytes;
  p.decode_s = p.bytes;
  p.omega = {1, 0.5, kNaN, 0.5};
  p.stage = {StageFixed{1, 0, 0, 0}};
  p.latency_weight = 0;
  p.theta = 1;
  p.avg_bits_cap = 4;
  try {
    solve_ilp(p, 10);
    ADD_FAILURE() << "a NaN objective reached the solver";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("objective coefficient"), std::string::npos) << e.what();
  }
  p.omega = {1, 0.5, 1e30, 0.5};  // finite, but past what Clp accepts
  EXPECT_THROW(solve_ilp(p, 10), Error);
  p.omega = {1, 0.5, 1, 0.5};
  p.avg_bits_cap = kNaN;  // not finite: no budget row, as before
  EXPECT_TRUE(solve_ilp(p, 10).found);
}

}  // namespace
}  // namespace fsq::plan
