// A cluster file: the GPUs a plan may use, the node each sits in, and the links between
// nodes.
//
// {"devices": [{"type": "T4-16G", "count": 3, "node": "a"}, {"type": "V100-32G", "node": "b"}],
//  "links": {"intra_node_gbs": 12, "inter_node_gbs": 1.25,
//            "pairs": [{"nodes": ["a", "b"], "gbs": 3.0}]}}
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/gpu_specs.h"

namespace fsq::plan {

struct Device {
  GpuSpec spec;
  std::string node;
  int id = 0;  // position in the cluster file's expansion
};

struct NodeLink {
  std::string a, b;
  double gbs = 0;
};

struct Cluster {
  std::vector<Device> devices;
  // Defaults: PCIe 3.0 x16 inside a node, 10 Gbit/s Ethernet between nodes.
  double intra_node_gbs = 12.0;
  double inter_node_gbs = 1.25;
  std::vector<NodeLink> pairs;

  // GB/s between the nodes of two devices.
  double link_gbs(const Device& from, const Device& to) const;
  // "3x T4-16G + 1x V100-32G"
  std::string describe() const;
};

Cluster cluster_from_json(const nlohmann::json& j, const GpuSpecTable& gpus, const std::string& source);
Cluster load_cluster(const std::filesystem::path& path, const GpuSpecTable& gpus);
// One device of a named type (fsq plan without --cluster).
Cluster single_device_cluster(const GpuSpec& spec);

}  // namespace fsq::plan
