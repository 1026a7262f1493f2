#include "plan/plan_report.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace fsq::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string family_name(Family f) {
  switch (f) {
    case Family::kOpt:
      return "opt";
    case Family::kBloom:
      return "bloom";
    default:
      return "llama";
  }
}

nlohmann::json result_json(const PlanResult& r) {
  nlohmann::json j;
  j["found"] = r.found;
  j["status"] = r.status;
  j["solve_seconds"] = r.solve_seconds;
  if (!r.found) return j;
  j["prefill_microbatch"] = r.workload.prefill_microbatch;
  j["decode_microbatch"] = r.workload.decode_microbatch;
  j["latency_s"] = r.eval.latency_s;
  j["throughput_tokens_s"] = r.throughput_tokens_s;
  j["sum_omega"] = r.eval.omega;
  j["avg_bits"] = r.eval.avg_bits;
  j["objective"] = r.eval.objective;
  j["bits_per_layer"] = r.layer_bits;
  nlohmann::json order = nlohmann::json::array(), stages = nlohmann::json::array();
  for (const auto& s : r.stages) {
    order.push_back(s.device.spec.name);
    nlohmann::json st;
    st["device"] = s.device.spec.name;
    st["node"] = s.device.node;
    st["device_id"] = s.device.id;
    st["first_layer"] = s.first_layer;
    st["layers"] = s.layers;
    st["bits"] = s.bits;
    st["memory_bytes"] = s.bytes;
    st["capacity_bytes"] = s.capacity_bytes;
    st["headroom_bytes"] = s.capacity_bytes - s.bytes;
    st["prefill_s_per_microbatch"] = s.prefill_s;
    st["decode_s_per_step_per_microbatch"] = s.decode_s;
    stages.push_back(st);
  }
  j["device_order"] = order;
  j["layers_per_stage"] = nlohmann::json::array();
  for (const auto& s : r.stages) j["layers_per_stage"].push_back(s.layers);
  j["stages"] = stages;
  return j;
}

}  // namespace

nlohmann::json plan_to_json(const PlanRequest& q, const PlanReport& r) {
  nlohmann::json j;
  j["model"] = {{"name", q.model.name},         {"family", family_name(q.model.family)}, {"layers", q.model.layers},
                {"hidden", q.model.hidden},     {"ffn", q.model.ffn},                    {"heads", q.model.heads},
                {"kv_heads", q.model.kv_heads}, {"vocab", q.model.vocab}};
  j["cluster"] = q.cluster.describe();
  j["workload"] = {{"prompt_len", q.workload.prompt_len},
                   {"new_tokens", q.workload.new_tokens},
                   {"batch", q.workload.batch},
                   {"kv_bits", q.workload.kv_bits}};
  j["cost_model"] = {{"kind", "roofline (datasheet rates)"},
                     {"compute_efficiency", q.options.efficiency.compute},
                     {"memory_efficiency", q.options.efficiency.memory},
                     {"memory_fraction", q.options.memory_fraction}};
  if (!q.profiles.empty()) {
    j["cost_model"]["kind"] = "measured profiles (fsq profile) where a device type has one, else roofline (datasheet rates)";
    j["cost_model"]["profiles"] = nlohmann::json::array();
    for (const auto& p : q.profiles)
      j["cost_model"]["profiles"].push_back({{"device", p.device}, {"file", p.source}, {"measured_on", p.measured_on}});
  }
  j["widths"] = q.options.widths;
  j["omega_source"] = q.omega_source;
  j["search"] = {{"solver", q.options.solver},
                 {"group_size", r.group_size},
                 {"orders_considered", r.orders_considered},
                 {"orders_total", r.orders_total},
                 {"candidates_evaluated", r.candidates_evaluated},
                 {"ilp_solves", r.ilp_solves},
                 {"ilp_time_limit_s", q.options.time_limit_s},
                 {"theta", q.options.theta},
                 {"seconds", r.seconds}};
  j["plan"] = result_json(r.plan);
  j["baselines"] = {{"uniform", result_json(r.uniform)}, {"pipeedge", result_json(r.pipeedge)}};
  if (r.plan.found) {
    if (r.uniform.found) j["speedup_vs_uniform"] = r.plan.throughput_tokens_s / r.uniform.throughput_tokens_s;
    if (r.pipeedge.found) j["speedup_vs_pipeedge"] = r.plan.throughput_tokens_s / r.pipeedge.throughput_tokens_s;
  }
  return j;
}

std::string plan_table(const PlanRequest& q, const PlanReport& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s on %s: prompt %lld, %lld new tokens, batch %lld, KV %d-bit; omega: %s\n",
                q.model.name.c_str(), q.cluster.describe().c_str(), static_cast<long long>(q.workload.prompt_len),
                static_cast<long long>(q.workload.new_tokens), static_cast<long long>(q.workload.batch), q.workload.kv_bits,
                q.omega_source.c_str());
  out += line;
  for (const auto& p : q.profiles) {
    std::snprintf(line, sizeof line, "latency of %s: measured profile %s (%s)\n", p.device.c_str(), p.source.c_str(),
                  p.measured_on.c_str());
    out += line;
  }
  if (r.plan.found) {
    std::snprintf(line, sizeof line, "plan: prefill micro-batch %lld, decode micro-batch %lld (%s, %.2f s)\n",
                  static_cast<long long>(r.plan.workload.prefill_microbatch),
                  static_cast<long long>(r.plan.workload.decode_microbatch), r.plan.status.c_str(), r.plan.solve_seconds);
    out += line;
    out += "stage  device          layers   bits                       memory GiB (of)   prefill ms  decode ms\n";
    for (size_t j = 0; j < r.plan.stages.size(); ++j) {
      const auto& s = r.plan.stages[j];
      std::string bits;
      char range[32] = "-";
      if (s.layers) std::snprintf(range, sizeof range, "%d-%d", s.first_layer, s.first_layer + s.layers - 1);
      // Runs of equal widths: "4x8 2x4".
      for (size_t k = 0; k < s.bits.size();) {
        size_t e = k;
        while (e < s.bits.size() && s.bits[e] == s.bits[k]) ++e;
        char run[32];
        std::snprintf(run, sizeof run, "%s%zux%d", bits.empty() ? "" : " ", e - k, s.bits[k]);
        bits += run;
        k = e;
      }
      std::snprintf(line, sizeof line, "%-6zu %-15s %-8s %-26s %6.1f (%5.1f)    %10.2f %10.3f\n", j, s.device.spec.name.c_str(),
                    range, bits.c_str(), s.bytes / kGiB, s.capacity_bytes / kGiB, s.prefill_s * 1e3, s.decode_s * 1e3);
      out += line;
    }
  }
  out += "method     tokens/s   latency s   avg bits   sum omega    speedup\n";
  for (const PlanResult* p : {&r.plan, &r.pipeedge, &r.uniform}) {
    if (!p->found) {
      std::snprintf(line, sizeof line, "%-10s %s\n", p->name.c_str(), p->status.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-10s %8.1f %11.2f %10.2f %11.4g %9.2fx\n", p->name.c_str(), p->throughput_tokens_s,
                    p->eval.latency_s, p->eval.avg_bits, p->eval.omega,
                    r.plan.found ? r.plan.throughput_tokens_s / p->throughput_tokens_s : 0.0);
    }
    out += line;
  }
  return out;
}

}  // namespace fsq::plan
