#include <chrono>
#include <algorithm>
#include <cmath>
#include <optional>

#include "plan/solvers.h"

namespace fsq::plan {

namespace {

// Stages proportional to capacity left after fixed costs: a start that fits where an even
// split overflows a small device.
std::vector<int> capacity_partition(const PlanProblem& p) {
  std::vector<double> free(p.stages);
  double total = 0;
  for (int j = 0; j < p.stages; ++j) total += free[j] = std::max(0.0, p.stage[j].capacity_bytes - p.stage[j].bytes);
  std::vector<int> stage_of(p.groups, p.stages - 1);
  if (total <= 0) return even_partition(p.groups, p.stages);
  double acc = 0;
  int g = 0;
  for (int j = 0; j < p.stages && g < p.groups; ++j) {
    acc += free[j] / total;
    int end = j + 1 == p.stages ? p.groups : static_cast<int>(std::lround(acc * p.groups));
    for (; g < end; ++g) stage_of[g] = j;
  }
  return stage_of;
}

// Starts from a DP over contiguous splits in which each stage also picks one width. The
// latency's sum terms and theta * omega add up over stages, its max terms do not: so the DP
// minimizes the additive part with every stage's pipeline cost ((M_pre - 1) * prefill +
// steps * (M_dec - 1) * decode) capped at T and memory respected, for T shrinking from
// unbounded in 3 % steps; each optimum is scored exactly and the best `keep` are returned.
// O(stages * groups^2 * widths) per T.
std::vector<Assignment> dp_starts(const PlanProblem& p, size_t keep) {
  const int G = p.groups, S = p.stages, W = p.num_widths();
  auto idx = [&](int j, int w, int g) { return (static_cast<size_t>(j) * W + w) * (G + 1) + g; };
  std::vector<double> pre(static_cast<size_t>(S) * W * (G + 1), 0), dec(pre.size(), 0), bytes(pre.size(), 0), omega(pre.size(), 0);
  for (int j = 0; j < S; ++j)
    for (int w = 0; w < W; ++w)
      for (int g = 0; g < G; ++g) {
        pre[idx(j, w, g + 1)] = pre[idx(j, w, g)] + p.prefill_s[p.at(g, j, w)];
        dec[idx(j, w, g + 1)] = dec[idx(j, w, g)] + p.decode_s[p.at(g, j, w)];
        bytes[idx(j, w, g + 1)] = bytes[idx(j, w, g)] + p.bytes[p.at(g, j, w)];
        omega[idx(j, w, g + 1)] = omega[idx(j, w, g)] + p.omega[p.omega_at(g, w)];
      }
  const double cp = std::max(0.0, p.prefill_microbatches - 1), cd = p.decode_steps * std::max(0.0, p.decode_microbatches - 1);
  auto split = [&](double cap, double& worst) -> std::optional<Assignment> {
    const double inf = INFINITY;
    std::vector<double> best(static_cast<size_t>(S) * (G + 1), inf);
    std::vector<int> from(best.size(), 0), width(best.size(), 0);
    for (int j = 0; j < S; ++j)
      for (int e = 0; e <= G; ++e)
        for (int b = 0; b <= e; ++b) {
          double prev = j == 0 ? (b == 0 ? 0 : inf) : best[static_cast<size_t>(j - 1) * (G + 1) + b];
          if (prev == inf) continue;
          for (int w = 0; w < (b == e ? 1 : W); ++w) {
            double sp = p.stage[j].prefill_s + pre[idx(j, w, e)] - pre[idx(j, w, b)];
            double sd = p.stage[j].decode_s + dec[idx(j, w, e)] - dec[idx(j, w, b)];
            if (p.stage[j].bytes + bytes[idx(j, w, e)] - bytes[idx(j, w, b)] > p.stage[j].capacity_bytes) continue;
            if (cp * sp + cd * sd > cap) continue;
            double v = prev + p.latency_weight * (sp + p.decode_steps * sd) + p.theta * (omega[idx(j, w, e)] - omega[idx(j, w, b)]);
            size_t k = static_cast<size_t>(j) * (G + 1) + e;
            if (v < best[k]) best[k] = v, from[k] = b, width[k] = w;
          }
        }
    if (best[static_cast<size_t>(S - 1) * (G + 1) + G] == inf) return std::nullopt;
    Assignment a{std::vector<int>(G), std::vector<int>(G)};
    worst = 0;
    for (int j = S - 1, e = G; j >= 0; --j) {
      size_t k = static_cast<size_t>(j) * (G + 1) + e;
      int b = from[k], w = width[k];
      for (int g = b; g < e; ++g) a.stage[g] = j, a.width[g] = w;
      worst = std::max(worst, cp * (p.stage[j].prefill_s + pre[idx(j, w, e)] - pre[idx(j, w, b)]) +
                                  cd * (p.stage[j].decode_s + dec[idx(j, w, e)] - dec[idx(j, w, b)]));
      e = b;
    }
    return a;
  };
  std::vector<std::pair<Evaluation, Assignment>> found;
  double worst = 0;
  auto a = split(INFINITY, worst);
  constexpr int kMaxSteps = 150;
  for (int step = 0; a && step < kMaxSteps; ++step) {
    found.push_back({evaluate(p, *a), *a});
    if (worst <= 0) break;
    a = split(worst * 0.97, worst);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
    if (x.first.violation_amount != y.first.violation_amount) return x.first.violation_amount < y.first.violation_amount;
    return x.first.objective < y.first.objective;
  });
  std::vector<Assignment> starts;
  for (size_t i = 0; i < found.size() && i < keep; ++i) starts.push_back(found[i].second);
  return starts;
}

// The search's running totals: per-stage bytes and times plus summed omega and bits, so a
// move is scored in O(stages) instead of re-evaluating every group.
struct Totals {
  std::vector<double> bytes, pre, dec;
  double omega = 0, bits = 0;
  double violation = 0, objective = 0;
};

class LocalSearch {
 public:
  explicit LocalSearch(const PlanProblem& p) : p_(p) {
    for (int g = 0; g < p.groups; ++g) total_params_ += p.group_params[g];
  }

  Totals totals(const Assignment& a) const {
    Totals t;
    t.bytes.resize(p_.stages), t.pre.resize(p_.stages), t.dec.resize(p_.stages);
    for (int j = 0; j < p_.stages; ++j) t.bytes[j] = p_.stage[j].bytes, t.pre[j] = p_.stage[j].prefill_s, t.dec[j] = p_.stage[j].decode_s;
    for (int g = 0; g < p_.groups; ++g) apply(t, g, a.stage[g], a.width[g], +1);
    score(t);
    return t;
  }

  // Adds (sign +1) or removes (-1) group g placed on stage j at width w.
  void apply(Totals& t, int g, int j, int w, double sign) const {
    size_t k = p_.at(g, j, w);
    t.bytes[j] += sign * p_.bytes[k];
    t.pre[j] += sign * p_.prefill_s[k];
    t.dec[j] += sign * p_.decode_s[k];
    t.omega += sign * p_.omega[p_.omega_at(g, w)];
    t.bits += sign * p_.widths[w] * p_.group_params[g];
  }

  // The same objective and relative excesses as evaluate(); contiguity is kept by the moves.
  void score(Totals& t) const {
    double sum_pre = 0, max_pre = 0, sum_dec = 0, max_dec = 0, v = 0;
    for (int j = 0; j < p_.stages; ++j) {
      sum_pre += t.pre[j], sum_dec += t.dec[j];
      max_pre = std::max(max_pre, t.pre[j]), max_dec = std::max(max_dec, t.dec[j]);
      if (t.bytes[j] > p_.stage[j].capacity_bytes) v += (t.bytes[j] - p_.stage[j].capacity_bytes) / p_.stage[j].capacity_bytes;
    }
    if (t.omega > p_.omega_cap) v += (t.omega - p_.omega_cap) / p_.omega_cap;
    double avg_bits = total_params_ > 0 ? t.bits / total_params_ : 0;
    if (avg_bits > p_.avg_bits_cap) v += (avg_bits - p_.avg_bits_cap) / p_.avg_bits_cap;
    double latency = sum_pre + (p_.prefill_microbatches - 1) * max_pre +
                     p_.decode_steps * (sum_dec + (p_.decode_microbatches - 1) * max_dec);
    t.violation = v;
    t.objective = p_.latency_weight * latency + p_.theta * t.omega;
  }

  static bool better(const Totals& a, const Totals& b) {
    constexpr double kTie = 1e-12;
    if (a.violation < b.violation - kTie) return true;
    if (a.violation > b.violation + kTie) return false;
    return a.objective < b.objective * (1 - kTie) - kTie;
  }

  // First-improvement descent over three moves: a group to the neighbouring stage (where
  // the order allows), one group a width up or down, and a bit transfer (one group up,
  // another down).
  void descend(Assignment& a) const {
    Totals cur = totals(a);
    const int G = p_.groups, W = p_.num_widths();
    bool improved = true;
    auto consider = [&](Totals& cand, auto&& commit) {
      score(cand);
      if (better(cand, cur)) {
        cur = cand;
        commit();
        improved = true;
      }
    };
    while (improved) {
      improved = false;
      for (int g = 0; g < G; ++g)
        for (int d : {-1, 1}) {
          int s = a.stage[g] + d;
          if (s < 0 || s >= p_.stages) continue;
          if ((g > 0 && s < a.stage[g - 1]) || (g + 1 < G && s > a.stage[g + 1])) continue;
          Totals cand = cur;
          apply(cand, g, a.stage[g], a.width[g], -1);
          apply(cand, g, s, a.width[g], +1);
          consider(cand, [&] { a.stage[g] = s; });
        }
      for (int g = 0; g < G; ++g)
        for (int d : {-1, 1}) {
          int w = a.width[g] + d;
          if (w < 0 || w >= W) continue;
          Totals cand = cur;
          apply(cand, g, a.stage[g], a.width[g], -1);
          apply(cand, g, a.stage[g], w, +1);
          consider(cand, [&] { a.width[g] = w; });
        }
      for (int up = 0; up < G; ++up)
        for (int down = 0; down < G; ++down) {
          if (up == down || a.width[up] + 1 >= W || a.width[down] == 0) continue;
          Totals cand = cur;
          apply(cand, up, a.stage[up], a.width[up], -1);
          apply(cand, up, a.stage[up], a.width[up] + 1, +1);
          apply(cand, down, a.stage[down], a.width[down], -1);
          apply(cand, down, a.stage[down], a.width[down] - 1, +1);
          consider(cand, [&] { ++a.width[up], --a.width[down]; });
        }
    }
  }

 private:
  const PlanProblem& p_;
  double total_params_ = 0;
};

}  // namespace

Solution solve_heuristic(const PlanProblem& p) {
  auto t0 = std::chrono::steady_clock::now();
  LocalSearch search(p);
  Solution best;
  Totals best_totals;
  bool have = false;
  std::vector<Assignment> starts = dp_starts(p, 3);
  for (int w = 0; w < p.num_widths(); ++w)
    for (const auto& partition : {even_partition(p.groups, p.stages), capacity_partition(p)})
      starts.push_back({partition, std::vector<int>(p.groups, w)});
  for (Assignment& a : starts) {
    search.descend(a);
    Totals t = search.totals(a);
    if (!have || LocalSearch::better(t, best_totals)) {
      best.assignment = a;
      best_totals = t;
      have = true;
    }
  }
  best.eval = evaluate(p, best.assignment);
  best.found = best.eval.feasible;
  best.status = best.found ? "heuristic" : "no feasible plan found";
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

}  // namespace fsq::plan
