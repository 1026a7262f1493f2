// The planner end to end in its cost model: plans fit, never lose to the baselines, are
// deterministic, and impossible requests get one clear error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan/cluster.h"
#include "plan/plan_report.h"
#include "plan/planner.h"

namespace fsq::plan {
namespace {

Cluster cluster_of(const nlohmann::json& j) { return cluster_from_json(j, GpuSpecTable::builtin(), "cluster.json"); }

PlanRequest paper_request(const std::string& preset, const nlohmann::json& cluster) {
  PlanRequest r;
  r.model = model_preset(preset);
  r.cluster = cluster_of(cluster);
  r.workload.prompt_len = 512;
  r.workload.new_tokens = 100;
  r.workload.batch = 32;
  r.layer_omega = proxy_omega(r.model, r.options.widths);
  r.omega_source = "proxy";
  r.options.time_limit_s = 20;
  return r;
}

std::string planner_error_of(const PlanRequest& r) {
  try {
    make_plan(r);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Planner, HeterogeneousClusterPlanFitsAndBeatsTheBaselines) {
  PlanRequest r = paper_request("opt-30b", {{"devices", {{{"type", "T4-16G"}, {"count", 3}, {"node", "a"}},
                                                         {{"type", "V100-32G"}, {"node", "b"}}}}});
  PlanReport rep = make_plan(r);
  ASSERT_TRUE(rep.plan.found) << rep.plan.status;
  ASSERT_TRUE(rep.pipeedge.found);
  ASSERT_TRUE(rep.uniform.found);
  EXPECT_EQ(rep.orders_total, 4u);  // the V100 in any of four places; the T4s are interchangeable
  int layers = 0;
  for (const auto& s : rep.plan.stages) {
    EXPECT_LE(s.bytes, s.capacity_bytes) << s.device.spec.name;
    layers += s.layers;
  }
  EXPECT_EQ(layers, 48);
  EXPECT_EQ(rep.plan.layer_bits.size(), 48u);
  // Same cost model: the plan is at least as fast as PipeEdge, at no worse summed omega.
  EXPECT_GE(rep.plan.throughput_tokens_s, rep.pipeedge.throughput_tokens_s);
  EXPECT_LE(rep.plan.eval.omega, rep.pipeedge.eval.omega * (1 + 1e-9));
  EXPECT_NEAR(rep.plan.throughput_tokens_s, 32.0 * 100 / rep.plan.eval.latency_s, 1e-9 * rep.plan.throughput_tokens_s);
  // Memory fraction 0.9 of 16 GiB.
  EXPECT_DOUBLE_EQ(rep.plan.stages[0].capacity_bytes, 0.9 * 16 * 1024.0 * 1024 * 1024);
}

TEST(Planner, SameRequestSamePlan) {
  PlanRequest r = paper_request("llama-2-13b", {{"devices", {{{"type", "A10"}, {"count", 2}}, {{"type", "L4"}}}}});
  nlohmann::json a = plan_to_json(r, make_plan(r)), b = plan_to_json(r, make_plan(r));
  for (auto* j : {&a, &b}) {
    (*j)["search"].erase("seconds");
    for (auto* p : {&(*j)["plan"], &(*j)["baselines"]["uniform"], &(*j)["baselines"]["pipeedge"]}) p->erase("solve_seconds");
  }
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(Planner, ModelThatFitsNowhereSaysHowMuchMemoryIsMissing) {
  PlanRequest r = paper_request("opt-66b", {{"devices", {{{"type", "T4-16G"}}}}});
  std::string msg = planner_error_of(r);
  EXPECT_NE(msg.find("plan: opt-66b does not fit on 1x T4-16G at any width: it needs "), std::string::npos) << msg;
  EXPECT_NE(msg.find("GiB missing"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(Planner, TargetBitsCapsTheAverageWidth) {
  PlanRequest r = paper_request("llama-2-7b", {{"devices", {{{"type", "A100-80G"}}}}});
  r.options.avg_bits_cap = 3.5;
  r.options.theta = 1e-3;  // trade latency for omega instead of PipeEdge's budget
  PlanReport rep = make_plan(r);
  ASSERT_TRUE(rep.plan.found);
  EXPECT_LE(rep.plan.eval.avg_bits, 3.5 + 1e-9);
  // With equal layers the best mix at 3.5 bits is half 3-bit, half 4-bit.
  int threes = 0, fours = 0;
  for (int b : rep.plan.layer_bits) threes += b == 3, fours += b == 4;
  EXPECT_EQ(threes + fours, 32);
}

TEST(Cluster, FileErrorsNameTheEntry) {
  auto msg = [](const nlohmann::json& j) {
    try {
      cluster_of(j);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg({{"devices", {{{"type", "T4-16G"}}, {{"type", "X1"}}}}}).find("cluster.json: devices[1]: unknown GPU type 'X1'"),
            std::string::npos);
  EXPECT_EQ(msg({{"devices", nlohmann::json::array()}}), "cluster.json: expected an object with a non-empty \"devices\" array");
  EXPECT_EQ(msg({{"devices", {{{"type", "T4-16G"}, {"count", 0}}}}}), "cluster.json: devices[0]: 'count' must be a positive integer");
  Cluster c = cluster_of({{"devices", {{{"type", "T4-16G"}, {"count", 2}, {"node", "a"}}, {{"type", "L4"}, {"node", "b"}}}},
                          {"links", {{"intra_node_gbs", 20}, {"pairs", {{{"nodes", {"b", "a"}}, {"gbs", 3}}}}}}});
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.link_gbs(c.devices[0], c.devices[1]), 20);
  EXPECT_EQ(c.link_gbs(c.devices[1], c.devices[2]), 3);
  EXPECT_EQ(c.describe(), "2x T4-16G + 1x L4");
}

}  // namespace
}  // namespace fsq::plan
