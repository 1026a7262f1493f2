#include "plan/cluster.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"

namespace fsq::plan {

namespace {

constexpr int kMaxDevices = 64;

double positive(const nlohmann::json& j, const char* key, double fallback, const std::string& where) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number() || !(j[key].get<double>() > 0) || !std::isfinite(j[key].get<double>()))
    throw Error(where, std::string("'") + key + "' must be a positive number (GB/s)");
  return j[key].get<double>();
}

}  // namespace

double Cluster::link_gbs(const Device& from, const Device& to) const {
  if (from.node == to.node) return intra_node_gbs;
  for (const auto& p : pairs)
    if ((p.a == from.node && p.b == to.node) || (p.a == to.node && p.b == from.node)) return p.gbs;
  return inter_node_gbs;
}

std::string Cluster::describe() const {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& d : devices) {
    if (!counts.empty() && counts.back().first == d.spec.name)
      ++counts.back().second;
    else
      counts.push_back({d.spec.name, 1});
  }
  std::string s;
  for (const auto& [name, n] : counts) s += (s.empty() ? "" : " + ") + std::to_string(n) + "x " + name;
  return s;
}

Cluster cluster_from_json(const nlohmann::json& j, const GpuSpecTable& gpus, const std::string& source) {
  if (!j.is_object() || !j.contains("devices") || !j["devices"].is_array() || j["devices"].empty())
    throw Error(source, "expected an object with a non-empty \"devices\" array");
  // A misspelt key ("cout", "Count", "inter_nodes_gbs") is refused, not ignored for its default.
  check_known_keys(j, {"devices", "links", "_about"}, source);
  Cluster c;
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    const auto& e = j["devices"][i];
    std::string where = source + ": devices[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string())
      throw Error(where, "missing string 'type' (a GPU type such as \"T4-16G\")");
    check_known_keys(e, {"type", "count", "node"}, where);
    const GpuSpec& spec = gpus.find(e["type"].get<std::string>(), where);
    int64_t count = 1;
    if (e.contains("count")) {
      if (!e["count"].is_number_integer() || e["count"].get<int64_t>() < 1)
        throw Error(where, "'count' must be a positive integer");
      count = e["count"].get<int64_t>();
    }
    std::string node = "node" + std::to_string(i);
    if (e.contains("node")) {
      if (!e["node"].is_string()) throw Error(where, "'node' must be a string");
      node = e["node"].get<std::string>();
    }
    if (static_cast<int64_t>(c.devices.size()) + count > kMaxDevices)
      throw Error(where, "more than " + std::to_string(kMaxDevices) + " devices");
    for (int64_t k = 0; k < count; ++k)
      c.devices.push_back({spec, node, static_cast<int>(c.devices.size())});
  }
  if (j.contains("links")) {
    const auto& l = j["links"];
    std::string where = source + ": links";
    if (!l.is_object()) throw Error(where, "expected an object");
    check_known_keys(l, {"intra_node_gbs", "inter_node_gbs", "pairs"}, where);
    c.intra_node_gbs = positive(l, "intra_node_gbs", c.intra_node_gbs, where);
    c.inter_node_gbs = positive(l, "inter_node_gbs", c.inter_node_gbs, where);
    if (l.contains("pairs")) {
      if (!l["pairs"].is_array()) throw Error(where, "'pairs' must be an array");
      for (size_t i = 0; i < l["pairs"].size(); ++i) {
        const auto& p = l["pairs"][i];
        std::string pw = where + ".pairs[" + std::to_string(i) + "]";
        if (!p.is_object() || !p.contains("nodes") || !p["nodes"].is_array() || p["nodes"].size() != 2 ||
            !p["nodes"][0].is_string() || !p["nodes"][1].is_string())
          throw Error(pw, "'nodes' must be two node names");
        check_known_keys(p, {"nodes", "gbs"}, pw);
        if (!p.contains("gbs")) throw Error(pw, "missing 'gbs' (GB/s between the two nodes)");
        c.pairs.push_back({p["nodes"][0].get<std::string>(), p["nodes"][1].get<std::string>(), positive(p, "gbs", 0, pw)});
        if (c.pairs.back().gbs <= 0) throw Error(pw, "missing 'gbs'");
      }
    }
  }
  return c;
}

Cluster load_cluster(const std::filesystem::path& path, const GpuSpecTable& gpus) {
  return cluster_from_json(read_json_file(path), gpus, path.string());
}

Cluster single_device_cluster(const GpuSpec& spec) {
  Cluster c;
  c.devices.push_back({spec, "node0", 0});
  return c;
}

}  // namespace fsq::plan
