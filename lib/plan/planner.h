// fsq plan's search: over device orders (identical devices deduplicated) and micro-batch
// sizes, solve the PlanProblem of each and keep the best; with the Uniform and PipeEdge
// baselines in the same cost model so every plan states its speedup over both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/plan_problem.h"
#include "plan/solvers.h"

namespace fsq::plan {

struct PlannerOptions {
  std::vector<int> widths = {3, 4, 8, 16};
  int group_size = 0;  // consecutive layers per ILP group; 0: <= 24 equal groups where possible
  double memory_fraction = 0.9;
  std::string solver = "ilp";  // "ilp" (heuristic first, CBC on the best candidates) or "heuristic"
  double time_limit_s = 10;    // per ILP solve
  int ilp_candidates = 3;
  int microbatch_candidates = 3;  // (eta, xi) pairs kept from the first pass for the order search
  double theta = 0;               // seconds per unit of omega in the objective
  // Quality budget: sum omega at most omega_cap, or at most every layer's omega at width
  // budget_width; neither (and theta 0): PipeEdge's (no worse than the baseline).
  std::optional<double> omega_cap;
  std::optional<int> budget_width;
  std::optional<double> avg_bits_cap;
  size_t max_orders = 720;
  Efficiency efficiency;
};

struct PlanRequest {
  ModelSpec model;
  Workload workload;  // micro-batch sizes are chosen by the planner
  Cluster cluster;
  std::vector<std::vector<double>> layer_omega;  // [layer][index into options.widths]
  std::string omega_source;
  PlannerOptions options;
  // Measured latencies per device type (fsq profile); other devices use the roofline.
  std::vector<LatencyProfile> profiles;
};

struct StagePlan {
  Device device;
  int first_layer = 0;
  int layers = 0;
  std::vector<int> bits;  // per layer of the stage
  double bytes = 0, capacity_bytes = 0, prefill_s = 0, decode_s = 0;
};

struct PlanResult {
  std::string name;  // "fsq", "uniform", "pipeedge"
  bool found = false;
  std::string status;
  double solve_seconds = 0;
  Workload workload;
  std::vector<StagePlan> stages;
  std::vector<int> layer_bits;
  Evaluation eval;
  double throughput_tokens_s = 0;  // batch * new_tokens / latency
};

struct PlanReport {
  PlanResult plan, uniform, pipeedge;
  int group_size = 1;
  size_t orders_considered = 0, orders_total = 0;
  int candidates_evaluated = 0, ilp_solves = 0;
  double seconds = 0;
};

// LLM-PQ's indicator without calibration data: every weight of unit range and variance,
// omega_{i,b} = sum_o D_o * (1 / (2^b - 1))^2 / 4; the same for every layer.
std::vector<std::vector<double>> proxy_omega(const ModelSpec& m, const std::vector<int>& widths);

// Throws fsq::Error when the model fits at no width (saying how much memory is missing).
PlanReport make_plan(const PlanRequest& request);

}  // namespace fsq::plan
