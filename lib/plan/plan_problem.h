// The planner's discrete problem for one device order and one pair of micro-batch sizes:
// give each group of consecutive layers one stage (device) and one width so that stages
// take contiguous runs of layers in order, every device's memory holds its share, and
//   latency = sum_j P_j + (M_pre - 1) max_j P_j + steps * (sum_j D_j + (M_dec - 1) max_j D_j)
// (P_j, D_j: stage j's time for one prefill / decode micro-batch; a pipeline of M
// micro-batches takes the sum of the stages once plus M - 1 times the slowest stage) plus
// theta * sum omega is least. The ILP, the heuristic and brute force all solve this and
// score answers with evaluate(), so their objectives are comparable.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "plan/cluster.h"
#include "plan/cost_model.h"
#include "plan/latency_profile.h"
#include "plan/model_spec.h"

namespace fsq::plan {

// Costs a stage carries whatever layers it gets: embeddings / head, temporaries, and the
// hand-off to the next stage.
struct StageFixed {
  double capacity_bytes = 0;
  double bytes = 0;
  double prefill_s = 0;
  double decode_s = 0;
};

struct PlanProblem {
  int groups = 0;
  int stages = 0;
  std::vector<int> widths;           // bits of each width index
  std::vector<int> group_layers;     // layers in each group
  std::vector<double> group_params;  // quantizable weights in each group
  // Per (group, stage, width): bytes (weights + KV cache) and seconds. Index: at(g, j, w).
  std::vector<double> bytes, prefill_s, decode_s;
  std::vector<double> omega;  // per (group, width): omega_at(g, w)
  std::vector<StageFixed> stage;
  double prefill_microbatches = 1;
  double decode_microbatches = 1;
  double decode_steps = 0;  // new tokens after the first, which prefill yields
  // Objective = latency_weight * latency + theta * omega; optional caps.
  double latency_weight = 1;
  double theta = 0;
  double omega_cap = std::numeric_limits<double>::infinity();
  double avg_bits_cap = std::numeric_limits<double>::infinity();

  int num_widths() const { return static_cast<int>(widths.size()); }
  size_t at(int g, int j, int w) const { return (static_cast<size_t>(g) * stages + j) * widths.size() + w; }
  size_t omega_at(int g, int w) const { return static_cast<size_t>(g) * widths.size() + w; }
};

// Per group: its stage and its width index.
struct Assignment {
  std::vector<int> stage;
  std::vector<int> width;
};

struct Evaluation {
  bool feasible = false;
  std::string violation;  // the first constraint broken, when infeasible
  double violation_amount = 0;  // sum of relative excesses: 0 when feasible
  double latency_s = 0;
  double omega = 0;
  double avg_bits = 0;
  double objective = 0;
  std::vector<double> stage_bytes, stage_prefill_s, stage_decode_s;
};

Evaluation evaluate(const PlanProblem& p, const Assignment& a);

struct Solution {
  bool found = false;
  Assignment assignment;
  Evaluation eval;
  std::string status;  // "optimal", "time limit", "infeasible", "heuristic", ...
  double seconds = 0;
};

// Inputs to build a problem.
struct ProblemInputs {
  const ModelSpec* model = nullptr;
  Workload workload;
  std::vector<Device> order;  // stage j runs on order[j]
  const Cluster* cluster = nullptr;
  std::vector<int> widths;
  std::vector<std::vector<double>> layer_omega;  // [layer][width index]
  int group_size = 1;                            // consecutive layers per group (--layers-per-group)
  double memory_fraction = 0.9;                  // of each device's memory the plan may use
  Efficiency efficiency;
  // Measured latencies (fsq profile): a device whose type has one takes its layer and head
  // times from it instead of the roofline; null or no match: roofline.
  const std::vector<LatencyProfile>* profiles = nullptr;
};

// The profile for device type `name` (case-insensitive), or null.
const LatencyProfile* find_profile(const std::vector<LatencyProfile>* profiles, const std::string& name);

PlanProblem build_problem(const ProblemInputs& in);

// Even split of `groups` over `stages` in order (earlier stages take the remainder).
std::vector<int> even_partition(int groups, int stages);

}  // namespace fsq::plan
