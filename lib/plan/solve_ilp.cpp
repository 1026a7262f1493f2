#include <Cbc_C_Interface.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "plan/solvers.h"

namespace fsq::plan {

namespace {

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};

// Memory rows in GiB keep the constraint matrix's coefficients near 1.
constexpr double kBytesPerUnit = 1024.0 * 1024.0 * 1024.0;

// One decision column: group g (per-group form) or the count of groups (aggregate form) on
// stage j at width w.
struct Column {
  int g, j, w;
};

// True when every group has the same costs (the planner's proxy omega on a uniform model):
// then only how many groups each stage holds at each width matters, and any such counts can
// be laid out contiguously, so integer counts n[j][w] replace the binaries without changing
// the optimum and without the layer-permutation symmetry that stalls branch and bound.
bool groups_identical(const PlanProblem& p) {
  for (int g = 1; g < p.groups; ++g) {
    if (p.group_layers[g] != p.group_layers[0] || p.group_params[g] != p.group_params[0]) return false;
    for (int w = 0; w < p.num_widths(); ++w) {
      if (p.omega[p.omega_at(g, w)] != p.omega[p.omega_at(0, w)]) return false;
      for (int j = 0; j < p.stages; ++j)
        if (p.bytes[p.at(g, j, w)] != p.bytes[p.at(0, j, w)] || p.prefill_s[p.at(g, j, w)] != p.prefill_s[p.at(0, j, w)] ||
            p.decode_s[p.at(g, j, w)] != p.decode_s[p.at(0, j, w)])
          return false;
    }
  }
  return true;
}

// Clp asserts (and aborts the process) on a coefficient of 1e25 or more, NaN included; callers
// validate their inputs (check_widths, check_omega), and this keeps anything they missed from
// reaching it: a coefficient that is not a finite number of sane size is an error.
constexpr double kLargestCoefficient = 1e20;

void check_coefficient(double v, const char* what) {
  if (!(std::abs(v) < kLargestCoefficient))
    throw Error("plan", std::string("the planning problem has a ") + what + " of " + std::to_string(v) +
                            " (not finite, or too large for the solver); check --bits, the calibration file and the device and profile files");
}

}  // namespace

Solution solve_ilp(const PlanProblem& p, double time_limit_s, const Assignment* warm_start) {
  auto t0 = std::chrono::steady_clock::now();
  const int G = p.groups, S = p.stages, W = p.num_widths();
  const bool aggregate = G > 1 && groups_identical(p);
  Solution sol;

  // Stages whose fixed costs alone overflow them cannot be used at all: infeasible.
  for (int j = 0; j < S; ++j)
    if (p.stage[j].bytes > p.stage[j].capacity_bytes) {
      sol.status = "infeasible";
      return sol;
    }

  std::vector<Column> columns;
  for (int g = 0; g < (aggregate ? 1 : G); ++g)
    for (int j = 0; j < S; ++j)
      for (int w = 0; w < W; ++w) columns.push_back({g, j, w});
  auto column_of = [&](int g, int j, int w) { return ((aggregate ? 0 : g) * S + j) * W + w; };
  const int n_cols = static_cast<int>(columns.size());
  const int t_pre = n_cols, t_dec = n_cols + 1;

  std::unique_ptr<Cbc_Model, CbcDeleter> model(Cbc_newModel());
  Cbc_Model* m = model.get();
  Cbc_setLogLevel(m, 0);
  Cbc_setMaximumSeconds(m, time_limit_s);
  Cbc_setAllowableGap(m, 0);
  Cbc_setAllowableFractionGap(m, 1e-9);
  // CBC 2.10.8's Cgl preprocessing fixed the optimum's variables away on a 3-layer, 3-width
  // knapsack (tests/plan/bit_assignment_test.cpp, trial 12) and reported a worse answer as
  // optimal; without it the same model solves exactly.
  Cbc_setParameter(m, "preprocess", "off");

  for (const Column& c : columns) {
    size_t k = p.at(c.g, c.j, c.w);
    double obj = p.latency_weight * (p.prefill_s[k] + p.decode_steps * p.decode_s[k]) + p.theta * p.omega[p.omega_at(c.g, c.w)];
    check_coefficient(obj, "objective coefficient");
    Cbc_addCol(m, "", 0, aggregate ? G : 1, obj, 1, 0, nullptr, nullptr);
  }
  const double inf = std::numeric_limits<double>::max();
  Cbc_addCol(m, "", 0, inf, p.latency_weight * (p.prefill_microbatches - 1), 0, 0, nullptr, nullptr);
  Cbc_addCol(m, "", 0, inf, p.latency_weight * p.decode_steps * (p.decode_microbatches - 1), 0, 0, nullptr, nullptr);

  std::vector<int> cols;
  std::vector<double> coefs;
  // Explicit zeros are left out of the matrix.
  auto add = [&](int col, double coef) {
    check_coefficient(coef, "constraint coefficient");
    if (coef != 0) cols.push_back(col), coefs.push_back(coef);
  };
  // Rows left empty (a memory row when nothing takes bytes) are always satisfied here.
  auto row = [&](char sense, double rhs) {
    if (!cols.empty()) check_coefficient(rhs, "constraint bound");
    if (!cols.empty()) Cbc_addRow(m, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), sense, rhs);
    cols.clear();
    coefs.clear();
  };
  if (aggregate) {
    for (int c = 0; c < n_cols; ++c) add(c, 1);
    row('E', G);
  } else {
    // One stage and one width per group.
    for (int g = 0; g < G; ++g) {
      for (int j = 0; j < S; ++j)
        for (int w = 0; w < W; ++w) add(column_of(g, j, w), 1);
      row('E', 1);
    }
    // Contiguity: the share of group g+1 on stages <= j never exceeds group g's.
    for (int g = 0; g + 1 < G; ++g)
      for (int j = 0; j + 1 < S; ++j) {
        for (int k = 0; k <= j; ++k)
          for (int w = 0; w < W; ++w) add(column_of(g + 1, k, w), 1), add(column_of(g, k, w), -1);
        row('L', 0);
      }
  }
  for (int j = 0; j < S; ++j) {
    for (int c = 0; c < n_cols; ++c)
      if (columns[c].j == j) add(c, p.bytes[p.at(columns[c].g, j, columns[c].w)] / kBytesPerUnit);
    row('L', (p.stage[j].capacity_bytes - p.stage[j].bytes) / kBytesPerUnit);
    // The slowest stage bounds every stage, prefill and decode.
    for (int phase = 0; phase < 2; ++phase) {
      const auto& t = phase == 0 ? p.prefill_s : p.decode_s;
      for (int c = 0; c < n_cols; ++c)
        if (columns[c].j == j) add(c, t[p.at(columns[c].g, j, columns[c].w)]);
      add(phase == 0 ? t_pre : t_dec, -1);
      row('L', -(phase == 0 ? p.stage[j].prefill_s : p.stage[j].decode_s));
    }
  }
  if (std::isfinite(p.omega_cap)) {
    for (int c = 0; c < n_cols; ++c) add(c, p.omega[p.omega_at(columns[c].g, columns[c].w)]);
    row('L', p.omega_cap);
  }
  if (std::isfinite(p.avg_bits_cap)) {
    double total = 0;
    for (int g = 0; g < G; ++g) total += p.group_params[g];
    for (int c = 0; c < n_cols; ++c) add(c, p.widths[columns[c].w] * p.group_params[columns[c].g] / total);
    row('L', p.avg_bits_cap);
  }

  if (warm_start && evaluate(p, *warm_start).feasible) {
    std::vector<double> start(n_cols, 0);
    for (int g = 0; g < G; ++g) start[column_of(g, warm_start->stage[g], warm_start->width[g])] += 1;
    std::vector<int> idx;
    std::vector<double> val;
    for (int c = 0; c < n_cols; ++c)
      if (start[c] > 0) idx.push_back(c), val.push_back(start[c]);
    Cbc_setMIPStartI(m, static_cast<int>(idx.size()), idx.data(), val.data());
  }

  Cbc_solve(m);
  const double* x = Cbc_bestSolution(m);
  if (x && !Cbc_isProvenInfeasible(m)) {
    Assignment& a = sol.assignment;
    if (aggregate) {
      // Stages in order; inside a stage, wider groups first.
      for (int j = 0; j < S; ++j)
        for (int w = W - 1; w >= 0; --w)
          for (long n = std::lround(x[column_of(0, j, w)]); n > 0; --n) a.stage.push_back(j), a.width.push_back(w);
    } else {
      a.stage.assign(G, 0);
      a.width.assign(G, 0);
      for (int g = 0; g < G; ++g) {
        double best = -1;
        for (int j = 0; j < S; ++j)
          for (int w = 0; w < W; ++w)
            if (x[column_of(g, j, w)] > best) best = x[column_of(g, j, w)], a.stage[g] = j, a.width[g] = w;
      }
    }
    if (static_cast<int>(a.stage.size()) == G) {
      sol.eval = evaluate(p, a);
      sol.found = sol.eval.feasible;
    }
    sol.status = !sol.found ? "no solution" : Cbc_isProvenOptimal(m) ? "optimal" : "time limit";
  } else {
    sol.status = Cbc_isProvenInfeasible(m) ? "infeasible" : "no solution";
  }
  sol.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sol;
}

}  // namespace fsq::plan
