#include "plan/plan_problem.h"

#include <algorithm>

#include "common/error.h"

namespace fsq::plan {

Evaluation evaluate(const PlanProblem& p, const Assignment& a) {
  Evaluation e;
  const int S = p.stages;
  e.stage_bytes.assign(S, 0);
  e.stage_prefill_s.assign(S, 0);
  e.stage_decode_s.assign(S, 0);
  for (int j = 0; j < S; ++j) {
    e.stage_bytes[j] = p.stage[j].bytes;
    e.stage_prefill_s[j] = p.stage[j].prefill_s;
    e.stage_decode_s[j] = p.stage[j].decode_s;
  }
  double bits_weighted = 0, params = 0;
  bool ordered = true;
  for (int g = 0; g < p.groups; ++g) {
    int j = a.stage[g], w = a.width[g];
    if (g > 0 && j < a.stage[g - 1]) ordered = false;
    e.stage_bytes[j] += p.bytes[p.at(g, j, w)];
    e.stage_prefill_s[j] += p.prefill_s[p.at(g, j, w)];
    e.stage_decode_s[j] += p.decode_s[p.at(g, j, w)];
    e.omega += p.omega[p.omega_at(g, w)];
    bits_weighted += p.widths[w] * p.group_params[g];
    params += p.group_params[g];
  }
  e.avg_bits = params > 0 ? bits_weighted / params : 0;
  double sum_pre = 0, max_pre = 0, sum_dec = 0, max_dec = 0;
  for (int j = 0; j < S; ++j) {
    sum_pre += e.stage_prefill_s[j];
    sum_dec += e.stage_decode_s[j];
    max_pre = std::max(max_pre, e.stage_prefill_s[j]);
    max_dec = std::max(max_dec, e.stage_decode_s[j]);
  }
  e.latency_s = sum_pre + (p.prefill_microbatches - 1) * max_pre +
                p.decode_steps * (sum_dec + (p.decode_microbatches - 1) * max_dec);
  e.objective = p.latency_weight * e.latency_s + p.theta * e.omega;

  // Relative excess of each broken constraint; a tiny slack absorbs the solver's rounding.
  constexpr double kSlack = 1e-9;
  auto excess = [&](double value, double cap, const std::string& what) {
    if (value > cap * (1 + kSlack) + kSlack) {
      e.violation_amount += (value - cap) / std::max(cap, 1e-300);
      if (e.violation.empty()) e.violation = what;
    }
  };
  if (!ordered) {
    e.violation_amount += 1;
    e.violation = "stages out of order";
  }
  for (int j = 0; j < S; ++j) excess(e.stage_bytes[j], p.stage[j].capacity_bytes, "memory of stage " + std::to_string(j));
  excess(e.omega, p.omega_cap, "quality budget (sum omega)");
  excess(e.avg_bits, p.avg_bits_cap, "average bits budget");
  e.feasible = e.violation.empty();
  return e;
}

std::vector<int> even_partition(int groups, int stages) {
  std::vector<int> stage_of(groups);
  int g = 0;
  for (int j = 0; j < stages; ++j) {
    int n = groups / stages + (j < groups % stages ? 1 : 0);
    for (int k = 0; k < n; ++k) stage_of[g++] = j;
  }
  return stage_of;
}

const LatencyProfile* find_profile(const std::vector<LatencyProfile>* profiles, const std::string& name) {
  if (!profiles) return nullptr;
  for (const auto& p : *profiles)
    if (same_gpu_type(p.device, name)) return &p;
  return nullptr;
}

PlanProblem build_problem(const ProblemInputs& in) {
  const ModelSpec& m = *in.model;
  const Workload& wl = in.workload;
  if (in.group_size < 1) throw Error("--layers-per-group", "must be at least 1");
  if (static_cast<int64_t>(in.layer_omega.size()) != m.layers)
    throw Error("planner", "omega given for " + std::to_string(in.layer_omega.size()) + " layers, model has " +
                               std::to_string(m.layers));
  PlanProblem p;
  p.stages = static_cast<int>(in.order.size());
  p.widths = in.widths;
  const int W = p.num_widths();
  for (int64_t first = 0; first < m.layers; first += in.group_size)
    p.group_layers.push_back(static_cast<int>(std::min<int64_t>(in.group_size, m.layers - first)));
  p.groups = static_cast<int>(p.group_layers.size());
  const double layer_params = static_cast<double>(layer_linear_params(m));
  const double kv = static_cast<double>(layer_kv_cache_bytes(m, wl));

  p.bytes.resize(static_cast<size_t>(p.groups) * p.stages * W);
  p.prefill_s.resize(p.bytes.size());
  p.decode_s.resize(p.bytes.size());
  p.omega.assign(static_cast<size_t>(p.groups) * W, 0);
  for (int j = 0; j < p.stages; ++j) {
    const LatencyProfile* measured = find_profile(in.profiles, in.order[j].spec.name);
    for (int w = 0; w < W; ++w) {
      PhaseSeconds t = measured ? profile_layer_seconds(*measured, wl, p.widths[w])
                                : layer_seconds(m, wl, in.order[j].spec, p.widths[w], in.efficiency);
      double layer_bytes = static_cast<double>(layer_weight_bytes(m, p.widths[w])) + kv;
      for (int g = 0; g < p.groups; ++g) {
        p.bytes[p.at(g, j, w)] = layer_bytes * p.group_layers[g];
        p.prefill_s[p.at(g, j, w)] = t.prefill * p.group_layers[g];
        p.decode_s[p.at(g, j, w)] = t.decode * p.group_layers[g];
      }
    }
  }
  int layer = 0;
  for (int g = 0; g < p.groups; ++g) {
    p.group_params.push_back(layer_params * p.group_layers[g]);
    for (int k = 0; k < p.group_layers[g]; ++k, ++layer)
      for (int w = 0; w < W; ++w) p.omega[p.omega_at(g, w)] += in.layer_omega[layer][w];
  }

  const double temps = static_cast<double>(std::max(prefill_temp_bytes(m, wl), decode_temp_bytes(m, wl)));
  p.stage.resize(p.stages);
  for (int j = 0; j < p.stages; ++j) {
    StageFixed& s = p.stage[j];
    s.capacity_bytes = in.order[j].spec.memory_bytes() * in.memory_fraction;
    s.bytes = temps;
    if (j == 0) s.bytes += static_cast<double>(embedding_bytes(m));
    if (j == p.stages - 1) {
      s.bytes += static_cast<double>(head_bytes(m) + logits_bytes(m, wl));
      const LatencyProfile* measured = find_profile(in.profiles, in.order[j].spec.name);
      PhaseSeconds h = measured ? profile_head_seconds(*measured, wl) : head_seconds(m, wl, in.order[j].spec, in.efficiency);
      s.prefill_s += h.prefill;
      s.decode_s += h.decode;
    } else {
      PhaseSeconds t = transfer_seconds(m, wl, in.cluster->link_gbs(in.order[j], in.order[j + 1]));
      s.prefill_s += t.prefill;
      s.decode_s += t.decode;
    }
  }
  p.prefill_microbatches = static_cast<double>(wl.prefill_microbatches());
  p.decode_microbatches = static_cast<double>(wl.decode_microbatches());
  p.decode_steps = static_cast<double>(std::max<int64_t>(wl.new_tokens - 1, 0));
  return p;
}

}  // namespace fsq::plan
