#include "calib/calib_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <span>
#include <vector>

#include "calib/calib_file.h"

namespace fsq {
namespace {

float median(std::vector<float> v) {
  if (v.empty()) return 0.0f;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

nlohmann::json channel_summary(std::span<const float> absmax) {
  std::vector<size_t> order(absmax.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t top = std::min(order.size(), static_cast<size_t>(kTopOutlierChannels));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](size_t a, size_t b) { return absmax[a] > absmax[b] || (absmax[a] == absmax[b] && a < b); });
  const float med = median(std::vector<float>(absmax.begin(), absmax.end()));
  const float max = top ? absmax[order[0]] : 0.0f;
  nlohmann::json channels = nlohmann::json::array();
  for (size_t i = 0; i < top; ++i) channels.push_back({{"channel", order[i]}, {"absmax", absmax[order[i]]}});
  return {{"channels", absmax.size()},
          {"absmax_max", max},
          {"absmax_median", med},
          {"outlier_ratio", med > 0 ? max / med : 0.0f},
          {"top_channels", channels}};
}

nlohmann::json fisher_summary(std::span<const float> f) {
  double sum = 0.0;
  float max = 0.0f;
  int64_t nonzero = 0, finite = 0;
  for (float v : f) {
    sum += v;
    max = std::max(max, v);
    nonzero += v > 0.0f;
    finite += std::isfinite(v);
  }
  const double n = static_cast<double>(f.size());
  return {{"mean", f.empty() ? 0.0 : sum / n},
          {"max", max},
          {"nonzero_fraction", f.empty() ? 0.0 : static_cast<double>(nonzero) / n},
          {"all_finite", finite == static_cast<int64_t>(f.size())}};
}

}  // namespace

nlohmann::json summarize_calibration(const CalibrationFile& file) {
  const nlohmann::json& prov = file.provenance();
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& layer : prov["layers"]) {
    const std::string prefix = layer["prefix"].get<std::string>();
    nlohmann::json groups = nlohmann::json::object();
    nlohmann::json fisher = nlohmann::json::object();
    for (const auto& group : layer["groups"]) {
      const auto& linears = group["linears"];
      const std::string first = linears.at(0).get<std::string>();
      auto stats = file.input_stats(first);
      nlohmann::json g = channel_summary(stats->absmax);
      g["linears"] = linears;
      groups[group["name"].get<std::string>()] = g;
      for (const auto& l : linears)
        if (const TensorView* f = file.fisher(l.get<std::string>())) fisher[l.get<std::string>()] = fisher_summary(float_span(*f));
    }
    nlohmann::json entry = {{"prefix", prefix}, {"groups", groups}, {"output", channel_summary(file.output_absmax(prefix))}};
    if (!fisher.empty()) entry["fisher"] = fisher;
    layers.push_back(entry);
  }
  nlohmann::json out = {{"file", file.path().string()}, {"layers", layers}};
  for (const char* key : {"model", "model_sha256", "data", "data_sha256", "samples", "seq_len", "seed", "bos",
                          "tokens", "fisher", "mean_loss", "tool_version"})
    if (prov.contains(key)) out[key] = prov[key];
  return out;
}

std::string render_calibration_summary(const nlohmann::json& s) {
  std::string out;
  char line[512];
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  out += "calibration file " + text(s["file"]) + "\n";
  for (const char* key : {"model", "model_sha256", "data", "data_sha256", "samples", "seq_len", "seed", "bos", "tokens",
                          "fisher", "mean_loss", "tool_version"})
    if (s.contains(key)) out += std::string("  ") + key + ": " + text(s[key]) + "\n";
  out += "\nper-layer input activations (absmax: max / median over channels; ratio = max/median; top channels)\n";
  std::snprintf(line, sizeof line, "  %-22s %-9s %6s %10s %10s %8s  %s\n", "layer", "group", "chans", "max",
                "median", "ratio", "top channels (index:absmax)");
  out += line;
  auto row = [&](const std::string& layer, const std::string& group, const nlohmann::json& g) {
    std::string top;
    for (const auto& c : g["top_channels"]) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%lld:%.3g", top.empty() ? "" : " ", c["channel"].get<long long>(),
                    c["absmax"].get<double>());
      top += buf;
    }
    std::snprintf(line, sizeof line, "  %-22s %-9s %6lld %10.4g %10.4g %8.1f  %s\n", layer.c_str(), group.c_str(),
                  g["channels"].get<long long>(), g["absmax_max"].get<double>(), g["absmax_median"].get<double>(),
                  g["outlier_ratio"].get<double>(), top.c_str());
    out += line;
  };
  for (const auto& layer : s["layers"]) {
    const std::string prefix = layer["prefix"].get<std::string>();
    for (const auto& [name, g] : layer["groups"].items()) row(prefix, name, g);
    row(prefix, "output", layer["output"]);
  }
  bool any_fisher = false;
  for (const auto& layer : s["layers"]) any_fisher |= layer.contains("fisher");
  if (any_fisher) {
    out += "\nFisher diagonal per linear (mean, max, fraction > 0)\n";
    for (const auto& layer : s["layers"]) {
      if (!layer.contains("fisher")) continue;
      for (const auto& [name, f] : layer["fisher"].items()) {
        std::snprintf(line, sizeof line, "  %-44s %12.4g %12.4g %8.4f%s\n", name.c_str(), f["mean"].get<double>(),
                      f["max"].get<double>(), f["nonzero_fraction"].get<double>(),
                      f["all_finite"].get<bool>() ? "" : "  NON-FINITE");
        out += line;
      }
    }
  }
  return out;
}

}  // namespace fsq
