// GPU types the planner knows: datasheet memory, tensor throughput and bandwidth, from the
// table lib/plan/gpu_specs.json (compiled in) or a user's file of the same shape.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fsq::plan {

struct GpuSpec {
  std::string name;
  double memory_gib = 0;
  double fp16_tflops = 0;  // dense tensor-core throughput
  double int8_tops = 0;    // 0: no int8 path; 8-bit layers then run at the fp16 rate
  double bandwidth_gbs = 0;

  int64_t memory_bytes() const { return static_cast<int64_t>(memory_gib * 1024.0 * 1024.0 * 1024.0); }
};

// GPU type names compare case-insensitively everywhere (the table, cluster files, profiles).
bool same_gpu_type(const std::string& a, const std::string& b);

class GpuSpecTable {
 public:
  // The built-in table (gpu_specs.json).
  static GpuSpecTable builtin();
  // {"gpus": [{"name", "memory_gib", "fp16_tflops", "int8_tops", "bandwidth_gbs"}, ...]};
  // `source` names the file in errors.
  static GpuSpecTable from_json(const nlohmann::json& j, const std::string& source);
  static GpuSpecTable load(const std::filesystem::path& path);

  // Entries of `other` replace same-named ones here and add the rest.
  void merge(const GpuSpecTable& other);
  // Adds `spec` unless its type is known (a device measured by fsq profile, e.g. "cpu",
  // whose rates stay 0: only its profile may time it).
  void add_if_unknown(const GpuSpec& spec);
  // Case-insensitive; throws fsq::Error naming `where` and listing the known types.
  const GpuSpec& find(const std::string& name, const std::string& where) const;
  const std::vector<GpuSpec>& all() const { return specs_; }

 private:
  std::vector<GpuSpec> specs_;
};

}  // namespace fsq::plan
