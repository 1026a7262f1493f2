#include "plan/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/error.h"
#include "plan/bit_assignment.h"

namespace fsq::plan {

namespace {

constexpr int kMaxAutoGroups = 24;

struct Candidate {
  std::vector<Device> order;
  Workload workload;
  PlanProblem problem;
  Solution solution;
};

std::vector<int64_t> microbatch_sizes(int64_t batch) {
  std::vector<int64_t> sizes;
  for (int64_t s = 1; s < batch; s *= 2) sizes.push_back(s);
  sizes.push_back(batch);
  return sizes;
}

// Unique orders of the devices, identical (type, node) devices counted once.
std::vector<std::vector<Device>> device_orders(const Cluster& c, size_t max_orders, size_t& total) {
  std::vector<Device> devs = c.devices;
  auto key = [](const Device& d) { return d.spec.name + '\x1f' + d.node; };
  std::sort(devs.begin(), devs.end(), [&](const Device& a, const Device& b) { return key(a) < key(b); });
  std::vector<std::vector<Device>> orders;
  // The cluster file's own order first, so capping keeps it.
  orders.push_back(c.devices);
  total = 0;
  do {
    ++total;
    bool same_as_file = true;
    for (size_t i = 0; i < devs.size(); ++i) same_as_file = same_as_file && key(devs[i]) == key(c.devices[i]);
    if (!same_as_file && orders.size() < max_orders) orders.push_back(devs);
  } while (std::next_permutation(devs.begin(), devs.end(), [&](const Device& a, const Device& b) { return key(a) < key(b); }));
  return orders;
}

ProblemInputs inputs_for(const PlanRequest& r, const std::vector<Device>& order, const Workload& w,
                         const std::vector<int>& widths, const std::vector<std::vector<double>>& omega, int group_size) {
  ProblemInputs in;
  in.model = &r.model;
  in.workload = w;
  in.order = order;
  in.cluster = &r.cluster;
  in.widths = widths;
  in.layer_omega = omega;
  in.group_size = group_size;
  in.memory_fraction = r.options.memory_fraction;
  in.efficiency = r.options.efficiency;
  in.profiles = &r.profiles;
  return in;
}

PlanResult describe(const std::string& name, const Candidate& c, const Solution& s, const PlanRequest& r) {
  PlanResult res;
  res.name = name;
  res.found = s.found;
  res.status = s.status;
  res.solve_seconds = s.seconds;
  res.workload = c.workload;
  res.eval = s.eval;
  if (!s.found) return res;
  const PlanProblem& p = c.problem;
  res.stages.resize(p.stages);
  int layer = 0;
  for (int j = 0; j < p.stages; ++j) {
    res.stages[j].device = c.order[j];
    res.stages[j].bytes = s.eval.stage_bytes[j];
    res.stages[j].capacity_bytes = p.stage[j].capacity_bytes;
    res.stages[j].prefill_s = s.eval.stage_prefill_s[j];
    res.stages[j].decode_s = s.eval.stage_decode_s[j];
  }
  for (int g = 0; g < p.groups; ++g) {
    StagePlan& st = res.stages[s.assignment.stage[g]];
    if (st.layers == 0) st.first_layer = layer;
    for (int k = 0; k < p.group_layers[g]; ++k, ++layer) {
      st.layers++;
      st.bits.push_back(p.widths[s.assignment.width[g]]);
      res.layer_bits.push_back(p.widths[s.assignment.width[g]]);
    }
  }
  for (int j = 0; j < p.stages; ++j)
    if (res.stages[j].layers == 0) res.stages[j].first_layer = -1;
  res.throughput_tokens_s = static_cast<double>(r.workload.batch * r.workload.new_tokens) / s.eval.latency_s;
  return res;
}

// Uniform: the cluster file's order, an even split of the layers, the highest width at
// which that fits, the best micro-batch sizes.
PlanResult uniform_baseline(const PlanRequest& r, const std::vector<int64_t>& mbs) {
  const auto& widths = r.options.widths;
  for (int wi = static_cast<int>(widths.size()) - 1; wi >= 0; --wi) {
    std::vector<std::vector<double>> omega(r.model.layers, std::vector<double>{0});
    for (int64_t l = 0; l < r.model.layers; ++l) omega[l][0] = r.layer_omega[l][wi];
    std::optional<Candidate> best;
    for (int64_t eta : mbs)
      for (int64_t xi : mbs) {
        Workload w = r.workload;
        w.prefill_microbatch = eta;
        w.decode_microbatch = xi;
        Candidate c{r.cluster.devices, w, build_problem(inputs_for(r, r.cluster.devices, w, {widths[wi]}, omega, 1)), {}};
        Assignment a{even_partition(c.problem.groups, c.problem.stages), std::vector<int>(c.problem.groups, 0)};
        c.solution.eval = evaluate(c.problem, a);
        c.solution.assignment = a;
        c.solution.found = c.solution.eval.feasible;
        c.solution.status = "even partition";
        if (c.solution.found && (!best || c.solution.eval.objective < best->solution.eval.objective)) best = std::move(c);
      }
    if (best) return describe("uniform", *best, best->solution, r);
  }
  PlanResult none;
  none.name = "uniform";
  none.status = "does not fit at any width";
  return none;
}

// Searches orders x micro-batches with `widths` (indices into the request's widths).
struct Search {
  const PlanRequest& r;
  std::vector<int64_t> mbs;
  int group_size;
  PlanReport& report;

  PlanResult run(const std::string& name, const std::vector<int>& width_idx, double theta, double omega_cap,
                 const std::vector<std::vector<Device>>& orders) {
    std::vector<int> widths;
    for (int wi : width_idx) widths.push_back(r.options.widths[wi]);
    std::vector<std::vector<double>> omega(r.model.layers);
    for (int64_t l = 0; l < r.model.layers; ++l)
      for (int wi : width_idx) omega[l].push_back(r.layer_omega[l][wi]);
    auto make = [&](const std::vector<Device>& order, int64_t eta, int64_t xi) {
      Workload w = r.workload;
      w.prefill_microbatch = eta;
      w.decode_microbatch = xi;
      Candidate c{order, w, build_problem(inputs_for(r, order, w, widths, omega, group_size)), {}};
      c.problem.theta = theta;
      c.problem.omega_cap = omega_cap;
      if (r.options.avg_bits_cap) c.problem.avg_bits_cap = *r.options.avg_bits_cap;
      c.solution = solve_heuristic(c.problem);
      ++report.candidates_evaluated;
      return c;
    };
    auto by_objective = [](const Candidate& a, const Candidate& b) {
      if (a.solution.found != b.solution.found) return a.solution.found;
      return a.solution.eval.objective < b.solution.eval.objective;
    };
    // Pass 1: micro-batch sizes on the cluster file's order.
    std::vector<Candidate> first;
    for (int64_t eta : mbs)
      for (int64_t xi : mbs) first.push_back(make(orders.front(), eta, xi));
    std::stable_sort(first.begin(), first.end(), by_objective);
    // Pass 2: every order with the best micro-batch sizes.
    std::vector<Candidate> all;
    const size_t keep = std::min<size_t>(first.size(), std::max(1, r.options.microbatch_candidates));
    for (size_t k = 0; k < keep; ++k) {
      all.push_back(first[k]);
      for (size_t o = 1; o < orders.size(); ++o)
        all.push_back(make(orders[o], first[k].workload.prefill_microbatch, first[k].workload.decode_microbatch));
    }
    std::stable_sort(all.begin(), all.end(), by_objective);
    size_t best = 0;
    if (r.options.solver == "ilp") {
      double best_obj = all[0].solution.found ? all[0].solution.eval.objective : INFINITY;
      for (size_t k = 0; k < std::min<size_t>(all.size(), std::max(1, r.options.ilp_candidates)); ++k) {
        Solution s = solve_ilp(all[k].problem, r.options.time_limit_s,
                               all[k].solution.found ? &all[k].solution.assignment : nullptr);
        ++report.ilp_solves;
        s.seconds += all[k].solution.seconds;
        if (s.found && (!all[k].solution.found || s.eval.objective <= all[k].solution.eval.objective)) {
          all[k].solution = s;
        } else if (all[k].solution.found) {
          // CBC stopped without beating the warm start: keep it, say so.
          all[k].solution.status = "heuristic (ILP: " + s.status + ")";
        }
        if (all[k].solution.found && all[k].solution.eval.objective < best_obj) best_obj = all[k].solution.eval.objective, best = k;
      }
    }
    return describe(name, all[best], all[best].solution, r);
  }
};

// The smallest group size giving at most kMaxAutoGroups groups, preferring one that divides
// the layer count: equal groups keep the ILP's aggregate form (solve_ilp.cpp) available.
int auto_group_size(int64_t layers) {
  int smallest = static_cast<int>((layers + kMaxAutoGroups - 1) / kMaxAutoGroups);
  for (int size = smallest; size <= 2 * smallest; ++size)
    if (layers % size == 0) return size;
  return smallest;
}

[[noreturn]] void throw_does_not_fit(const PlanRequest& r) {
  Workload w = r.workload;
  w.prefill_microbatch = 1;
  w.decode_microbatch = 1;
  const ModelSpec& m = r.model;
  int low = *std::min_element(r.options.widths.begin(), r.options.widths.end());
  double need = static_cast<double>(m.layers) * (layer_weight_bytes(m, low) + layer_kv_cache_bytes(m, w)) +
                embedding_bytes(m) + head_bytes(m) + logits_bytes(m, w) +
                static_cast<double>(r.cluster.devices.size()) * std::max(prefill_temp_bytes(m, w), decode_temp_bytes(m, w));
  double have = 0;
  for (const auto& d : r.cluster.devices) have += d.spec.memory_bytes() * r.options.memory_fraction;
  constexpr double GiB = 1024.0 * 1024 * 1024;
  char msg[400];
  if (need > have)
    std::snprintf(msg, sizeof msg,
                  "%s does not fit on %s at any width: it needs %.1f GiB at %d bits (batch %lld, context %lld, KV %d-bit, "
                  "micro-batch 1), the cluster offers %.1f GiB (%.0f%% of its memory): %.1f GiB missing",
                  m.name.c_str(), r.cluster.describe().c_str(), need / GiB, low, static_cast<long long>(w.batch),
                  static_cast<long long>(w.context()), w.kv_bits, have / GiB, r.options.memory_fraction * 100, (need - have) / GiB);
  else
    std::snprintf(msg, sizeof msg,
                  "%s does not fit on %s at any width: %.1f GiB of %.1f GiB would do in total, but no device split of whole "
                  "layers fits (a smaller batch or --memory-fraction closer to 1 may)",
                  m.name.c_str(), r.cluster.describe().c_str(), need / GiB, have / GiB);
  throw Error("plan", msg);
}

}  // namespace

std::vector<std::vector<double>> proxy_omega(const ModelSpec& m, const std::vector<int>& widths) {
  std::vector<double> per_width;
  for (int b : widths) {
    double step = 1.0 / (std::ldexp(1.0, b) - 1);
    per_width.push_back(static_cast<double>(layer_linear_params(m)) * step * step / 4);
  }
  return std::vector<std::vector<double>>(m.layers, per_width);
}

PlanReport make_plan(const PlanRequest& r) {
  auto t0 = std::chrono::steady_clock::now();
  const auto& o = r.options;
  check_widths(o.widths, {3, 4, 8, 16});  // is_supported_width: the cost model's widths
  if (static_cast<int64_t>(r.layer_omega.size()) != r.model.layers) throw Error("plan", "omega does not cover every layer");
  check_omega(r.layer_omega, {}, o.widths, "plan");
  if (!(std::isfinite(o.theta) && o.theta >= 0)) throw Error("--theta", "expected a finite number >= 0");
  if (o.solver != "ilp" && o.solver != "heuristic") throw Error("--solver", "expected ilp or heuristic, got " + quote_name(o.solver));

  PlanReport report;
  report.group_size = o.group_size > 0 ? o.group_size : auto_group_size(r.model.layers);
  const auto mbs = microbatch_sizes(r.workload.batch);
  const auto orders = device_orders(r.cluster, o.max_orders, report.orders_total);
  report.orders_considered = orders.size();
  Search search{r, mbs, report.group_size, report};

  report.uniform = uniform_baseline(r, mbs);
  // PipeEdge: one width for every layer (the highest that fits), heterogeneity-aware split.
  for (int wi = static_cast<int>(o.widths.size()) - 1; wi >= 0 && !report.pipeedge.found; --wi)
    report.pipeedge = search.run("pipeedge", {wi}, 0, INFINITY, orders);
  if (!report.pipeedge.found) throw_does_not_fit(r);

  std::vector<int> all_widths(o.widths.size());
  for (size_t i = 0; i < all_widths.size(); ++i) all_widths[i] = static_cast<int>(i);
  double cap = o.theta > 0 ? INFINITY : report.pipeedge.eval.omega;
  if (o.omega_cap) cap = *o.omega_cap;
  if (o.budget_width) {
    auto it = std::find(o.widths.begin(), o.widths.end(), *o.budget_width);
    if (it == o.widths.end()) throw Error("--quality-of", "width " + std::to_string(*o.budget_width) + " is not among --bits");
    cap = 0;
    for (const auto& layer : r.layer_omega) cap += layer[it - o.widths.begin()];
  }
  report.plan = search.run("fsq", all_widths, o.theta, cap, orders);
  // PipeEdge's plan lies in fsq's search space when it meets the budget; a search that
  // stopped above it returns it.
  const bool pipeedge_in_budget = report.pipeedge.eval.omega <= cap * (1 + 1e-9) &&
                                  (!o.avg_bits_cap || report.pipeedge.eval.avg_bits <= *o.avg_bits_cap + 1e-9);
  if (o.theta == 0 && pipeedge_in_budget &&
      (!report.plan.found || report.plan.eval.latency_s > report.pipeedge.eval.latency_s)) {
    std::string status = report.plan.status;
    report.plan = report.pipeedge;
    report.plan.name = "fsq";
    report.plan.status = "PipeEdge's plan (the search found nothing faster: " + status + ")";
  }
  if (!report.plan.found) {
    char msg[300];
    std::snprintf(msg, sizeof msg,
                  "no plan fits the memory within the quality budget (sum omega <= %.4g%s): the best width that fits for "
                  "every layer is %d bits (sum omega %.4g); relax --quality-of, --max-omega or --target-bits",
                  cap, o.avg_bits_cap ? (", average bits <= " + std::to_string(*o.avg_bits_cap)).c_str() : "",
                  report.pipeedge.layer_bits.empty() ? 0 : report.pipeedge.layer_bits[0], report.pipeedge.eval.omega);
    throw Error("plan", msg);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace fsq::plan
