// fsq plan's solve times on the issue's size: Llama-2-70b (80 layers) over 8 GPUs of four
// types, one device order and micro-batch pair. Per-layer omega either the proxy (all
// layers equal: the ILP's aggregate form) or seeded random per-layer values like a
// calibration file gives (the per-group form); without and with an average-bits budget of 5
// (a mix of widths). Counters: optimal (1 when CBC proved it),
// gap_pct (heuristic objective over the ILP's, minus 1). Run:
//   build/tests/bench/bench_plan_solve
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "plan/cluster.h"
#include "plan/planner.h"
#include "plan/solvers.h"

namespace fsq::plan {
namespace {

const Cluster& eight_gpus() {
  static const Cluster c = cluster_from_json(
      nlohmann::json::parse(R"({"devices": [{"type": "T4-16G", "count": 2, "node": "a"}, {"type": "V100-32G", "count": 2, "node": "b"},
                                             {"type": "A10", "count": 2, "node": "c"}, {"type": "A100-40G", "count": 2, "node": "d"}]})"),
      GpuSpecTable::builtin(), "bench");
  return c;
}

PlanProblem problem(bool per_layer_omega, int group_size, double avg_bits_cap) {
  static const ModelSpec model = model_preset("llama-2-70b");
  ProblemInputs in;
  in.model = &model;
  in.workload.prompt_len = 512;
  in.workload.new_tokens = 100;
  in.workload.batch = 32;
  in.workload.prefill_microbatch = 4;
  in.workload.decode_microbatch = 16;
  in.order = eight_gpus().devices;
  in.cluster = &eight_gpus();
  in.widths = {3, 4, 8, 16};
  in.layer_omega = proxy_omega(model, in.widths);
  if (per_layer_omega) {
    std::mt19937 rng(80);
    std::lognormal_distribution<double> sensitivity(0, 1);
    for (auto& layer : in.layer_omega) {
      double s = sensitivity(rng);
      for (double& o : layer) o *= s;
    }
  }
  in.group_size = group_size;
  PlanProblem p = build_problem(in);
  p.theta = 1e-6;  // trade latency for omega
  p.avg_bits_cap = avg_bits_cap;
  return p;
}

void run(benchmark::State& state, bool per_layer_omega, int group_size, bool ilp, double avg_bits_cap) {
  PlanProblem p = problem(per_layer_omega, group_size, avg_bits_cap);
  Solution heur = solve_heuristic(p), s;
  for (auto _ : state) s = ilp ? solve_ilp(p, 10, &heur.assignment) : solve_heuristic(p);
  state.counters["groups"] = p.groups;
  state.counters["optimal"] = s.status == "optimal";
  state.counters["objective"] = s.eval.objective;
  if (ilp) state.counters["gap_pct"] = 100 * (heur.eval.objective / s.eval.objective - 1);
}

BENCHMARK_CAPTURE(run, ilp_proxy_80_groups, false, 1, true, INFINITY)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, heuristic_proxy_80_groups, false, 1, false, INFINITY)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, ilp_proxy_80_groups_avg5bits, false, 1, true, 5.0)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, heuristic_proxy_80_groups_avg5bits, false, 1, false, 5.0)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, ilp_per_layer_20_groups, true, 4, true, INFINITY)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, heuristic_per_layer_20_groups, true, 4, false, INFINITY)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, ilp_per_layer_20_groups_avg5bits, true, 4, true, 5.0)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, heuristic_per_layer_20_groups_avg5bits, true, 4, false, 5.0)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, ilp_per_layer_80_groups, true, 1, true, INFINITY)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, heuristic_per_layer_80_groups, true, 1, false, INFINITY)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, ilp_per_layer_80_groups_avg5bits, true, 1, true, 5.0)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, heuristic_per_layer_80_groups_avg5bits, true, 1, false, 5.0)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fsq::plan

BENCHMARK_MAIN();
