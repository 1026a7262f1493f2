// Activation-aware scaling (AWQ) for GGUF export, from calibration statistics alone: for the
// linears that read an RMSNorm's output (attn_q/k/v after attn_norm, ffn_gate/up after
// ffn_norm), input column j is scaled by s_j = m_j^alpha (m_j = sqrt(E[x_j^2]), normalized
// to straddle 1) before blocking and the norm weight is divided by s_j, which leaves the fp
// model unchanged. alpha is searched per group on a grid, minimizing the diagonal estimate
// of the output error, sum_j E[x_j^2] (w_ij - q(w_ij s_j) / s_j)^2, with the export's own
// block quantizer on a strided subset of rows; alpha = 0 (no scaling) is on the grid, so the
// estimate never gets worse on those rows.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/export/gguf_export.h"

namespace fsq {

struct GgufAwqScales {
  std::map<std::string, std::vector<float>> column_scale;  // matrix name -> s (multiply columns)
  std::map<std::string, std::vector<float>> norm_divisor;  // norm name -> s (divide elements)
  nlohmann::json report = nlohmann::json::array();         // per group: alpha, error before/after
};

// `importance(name, cols)` as in GgufExportOptions (groups without statistics are skipped).
GgufAwqScales search_gguf_awq_scales(const GgufExportSource& source, const GgufExportPlan& plan,
                                     const std::function<std::vector<float>(const std::string&, int64_t)>& importance,
                                     int threads, const std::function<void(size_t, size_t)>& progress = {});
GgufAwqScales search_gguf_awq_scales(const GgufFile& source, const GgufExportPlan& plan,
                                     const std::function<std::vector<float>(const std::string&, int64_t)>& importance,
                                     int threads, const std::function<void(size_t, size_t)>& progress = {});

}  // namespace fsq
