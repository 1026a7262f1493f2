#include "plan/latency_profile.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "common/widths.h"

namespace fsq::plan {
namespace {

const char* phase_name(Phase p) { return p == Phase::kPrefill ? "prefill" : "decode"; }

Phase parse_phase(const nlohmann::json& v, const std::string& where) {
  if (v == "prefill") return Phase::kPrefill;
  if (v == "decode") return Phase::kDecode;
  throw Error(where, "'phase' must be \"prefill\" or \"decode\"");
}

std::array<double, 3> sample_features(const ProfileSample& s) {
  return fit_features(s.phase, s.bits == 0, s.batch, s.tokens, s.context);
}

std::string width_label(int bits) { return bits == 0 ? "the head" : std::to_string(bits) + "-bit layers"; }

int64_t get_count(const nlohmann::json& j, const char* key, const std::string& where, int64_t min) {
  if (!j.contains(key) || !j[key].is_number_integer()) throw Error(where, std::string("missing integer '") + key + "'");
  const int64_t v = j[key].get<int64_t>();
  if (v < min) throw Error(where, std::string("'") + key + "' must be at least " + std::to_string(min));
  return v;
}

std::string get_string(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) throw Error(where, std::string("missing string '") + key + "'");
  return j[key].get<std::string>();
}

nlohmann::json fit_json(const LatencyFit& f) {
  return {{"coef", f.coef}, {"points", f.points}, {"r2", f.r2}, {"max_rel_residual", f.max_rel_residual},
          {"floor_seconds", f.floor_seconds}};
}

}  // namespace

std::array<double, 3> fit_features(Phase phase, bool head, int64_t batch, int64_t tokens, int64_t context) {
  const double b = static_cast<double>(batch);
  if (head) return {1.0, b, 0.0};
  if (phase == Phase::kPrefill) {
    const double t = static_cast<double>(tokens);
    return {1.0, b * t, b * t * t};
  }
  return {1.0, b, b * static_cast<double>(context)};
}

double predict_seconds(const LatencyFit& fit, const std::array<double, 3>& x) {
  const double t = fit.coef[0] * x[0] + fit.coef[1] * x[1] + fit.coef[2] * x[2];
  return std::max(t, fit.floor_seconds);
}

LatencyFit fit_latency(const std::vector<ProfileSample>& samples, Phase phase, int bits, const std::string& what) {
  std::vector<const ProfileSample*> rows;
  std::set<std::array<double, 3>> distinct;
  for (const auto& s : samples) {
    if (s.phase != phase || s.bits != bits) continue;
    if (!(s.seconds > 0) || !std::isfinite(s.seconds))
      throw Error(what, std::string(phase_name(phase)) + " time of " + width_label(bits) + " must be positive");
    rows.push_back(&s);
    distinct.insert(sample_features(s));
  }
  const bool head = bits == 0;
  const int terms = head ? 2 : 3;
  if (static_cast<int>(distinct.size()) < terms)
    throw Error(what, std::to_string(distinct.size()) + " distinct " + phase_name(phase) + " shapes for " + width_label(bits) +
                          ": the fit needs at least " + std::to_string(terms) + " (more batch sizes or lengths)");
  // Rows divided by the measured time: least squares on relative error. Columns scaled to
  // unit max so QR sees comparable magnitudes (tokens^2 reaches 1e6 and more).
  const int n = static_cast<int>(rows.size());
  Eigen::MatrixXd a(n, terms);
  Eigen::VectorXd y(n);
  Eigen::VectorXd scale = Eigen::VectorXd::Zero(terms);
  for (int i = 0; i < n; ++i) {
    const auto x = sample_features(*rows[i]);
    for (int k = 0; k < terms; ++k) {
      a(i, k) = x[k] / rows[i]->seconds;
      scale[k] = std::max(scale[k], std::abs(x[k]));
    }
    y[i] = 1.0;
  }
  for (int k = 0; k < terms; ++k) a.col(k) /= scale[k];
  const Eigen::VectorXd c = a.colPivHouseholderQr().solve(y);
  LatencyFit f;
  for (int k = 0; k < terms; ++k) f.coef[k] = c[k] / scale[k];
  f.points = n;
  f.floor_seconds = rows.front()->seconds;
  double mean = 0;
  for (const auto* r : rows) {
    mean += r->seconds / n;
    f.floor_seconds = std::min(f.floor_seconds, r->seconds);
  }
  double ss_res = 0, ss_tot = 0;
  for (const auto* r : rows) {
    const auto x = sample_features(*r);
    const double fit = f.coef[0] * x[0] + f.coef[1] * x[1] + f.coef[2] * x[2];
    ss_res += (fit - r->seconds) * (fit - r->seconds);
    ss_tot += (r->seconds - mean) * (r->seconds - mean);
    f.max_rel_residual = std::max(f.max_rel_residual, std::abs(fit - r->seconds) / r->seconds);
  }
  f.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  return f;
}

void fit_profile(LatencyProfile& p) {
  const std::string what = p.source.empty() ? "profile" : p.source;
  p.prefill.clear();
  p.decode.clear();
  for (int b : p.widths) {
    p.prefill[b] = fit_latency(p.samples, Phase::kPrefill, b, what);
    p.decode[b] = fit_latency(p.samples, Phase::kDecode, b, what);
  }
  p.head_prefill = fit_latency(p.samples, Phase::kPrefill, 0, what);
  p.head_decode = fit_latency(p.samples, Phase::kDecode, 0, what);
}

PhaseSeconds profile_layer_seconds(const LatencyProfile& p, const Workload& w, int bits) {
  auto pre = p.prefill.find(bits);
  auto dec = p.decode.find(bits);
  if (pre == p.prefill.end() || dec == p.decode.end())
    throw Error(p.source, "no " + std::to_string(bits) + "-bit layers in this profile: rerun fsq profile with that width");
  // The roofline's decode context: the mean over the generation.
  const int64_t ctx = w.prompt_len + w.new_tokens / 2;
  PhaseSeconds t;
  t.prefill = predict_seconds(pre->second, fit_features(Phase::kPrefill, false, w.prefill_microbatch, w.prompt_len, 0));
  t.decode = predict_seconds(dec->second, fit_features(Phase::kDecode, false, w.decode_microbatch, 1, ctx));
  return t;
}

PhaseSeconds profile_head_seconds(const LatencyProfile& p, const Workload& w) {
  PhaseSeconds t;
  t.prefill = predict_seconds(p.head_prefill, fit_features(Phase::kPrefill, true, w.prefill_microbatch, 1, 0));
  t.decode = predict_seconds(p.head_decode, fit_features(Phase::kDecode, true, w.decode_microbatch, 1, 0));
  return t;
}

void check_profile_fits(const LatencyProfile& p, const ModelSpec& m, const std::vector<int>& widths) {
  if (p.hidden != m.hidden || p.ffn != m.ffn || p.heads != m.heads || p.kv_heads != m.kv_heads || p.vocab != m.vocab)
    throw Error(p.source, "measured on " + p.model_name + " (hidden " + std::to_string(p.hidden) + ", ffn " +
                              std::to_string(p.ffn) + ", heads " + std::to_string(p.heads) + "/" + std::to_string(p.kv_heads) +
                              ", vocab " + std::to_string(p.vocab) + "), not on a model of " + m.name +
                              "'s shape: run fsq profile on this model");
  for (int b : widths)
    if (!p.prefill.count(b))
      throw Error(p.source, "no " + std::to_string(b) + "-bit layers in this profile: rerun fsq profile with --widths including " +
                                std::to_string(b) + ", or plan with --bits of the profiled widths");
}

nlohmann::json profile_to_json(const LatencyProfile& p) {
  nlohmann::json j;
  j["kind"] = "latency profile";
  j["device"] = {{"name", p.device}, {"memory_gib", p.memory_gib}};
  j["measured_on"] = p.measured_on;
  j["model"] = {{"name", p.model_name}, {"hidden", p.hidden}, {"ffn", p.ffn}, {"heads", p.heads},
                {"kv_heads", p.kv_heads}, {"vocab", p.vocab}};
  j["widths"] = p.widths;
  nlohmann::json fits = nlohmann::json::object();
  for (int b : p.widths)
    fits[std::to_string(b)] = {{"prefill", fit_json(p.prefill.at(b))}, {"decode", fit_json(p.decode.at(b))}};
  fits["head"] = {{"prefill", fit_json(p.head_prefill)}, {"decode", fit_json(p.head_decode)}};
  j["fits"] = fits;
  j["fit_terms"] = {{"layer_prefill", "1, batch*tokens, batch*tokens^2"},
                    {"layer_decode", "1, batch, batch*context"},
                    {"head", "1, batch"}};
  j["samples"] = nlohmann::json::array();
  for (const auto& s : p.samples)
    j["samples"].push_back({{"phase", phase_name(s.phase)}, {"bits", s.bits}, {"batch", s.batch},
                            {"tokens", s.tokens}, {"context", s.context}, {"seconds", s.seconds}});
  return j;
}

LatencyProfile profile_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || j.value("kind", "") != "latency profile")
    throw Error(source, "not a latency profile (expected \"kind\": \"latency profile\", as fsq profile writes)");
  LatencyProfile p;
  p.source = source;
  // Every key fsq profile writes (profile_to_json, plus its report's invocation); any other is refused.
  check_known_keys(j, {"kind", "device", "measured_on", "model", "widths", "fits", "fit_terms", "samples", "widths_stored_as",
                       "producer", "invocation"},
                   source);
  if (!j.contains("device") || !j["device"].is_object()) throw Error(source, "missing object 'device'");
  check_known_keys(j["device"], {"name", "memory_gib"}, source + ": device");
  p.device = get_string(j["device"], "name", source + ": device");
  if (!j["device"].contains("memory_gib") || !j["device"]["memory_gib"].is_number() || !(j["device"]["memory_gib"].get<double>() > 0) ||
      !std::isfinite(j["device"]["memory_gib"].get<double>()))
    throw Error(source, "device: 'memory_gib' must be a positive number");
  p.memory_gib = j["device"]["memory_gib"].get<double>();
  p.measured_on = j.value("measured_on", "");
  if (!j.contains("model") || !j["model"].is_object()) throw Error(source, "missing object 'model'");
  const auto& m = j["model"];
  const std::string mw = source + ": model";
  check_known_keys(m, {"name", "hidden", "ffn", "heads", "kv_heads", "vocab", "path"}, mw);
  p.model_name = get_string(m, "name", mw);
  p.hidden = get_count(m, "hidden", mw, 1);
  p.ffn = get_count(m, "ffn", mw, 1);
  p.heads = get_count(m, "heads", mw, 1);
  p.kv_heads = get_count(m, "kv_heads", mw, 1);
  p.vocab = get_count(m, "vocab", mw, 1);
  if (!j.contains("widths") || !j["widths"].is_array() || j["widths"].empty()) throw Error(source, "missing array 'widths'");
  for (const auto& b : j["widths"]) {
    const int w = width_from_json(b, source, "widths");  // common/widths.h: no wrap past 2^31
    if (!is_supported_width(w)) throw Error(source, "'widths' must hold 3, 4, 8 or 16");
    p.widths.push_back(w);
  }
  if (!j.contains("samples") || !j["samples"].is_array()) throw Error(source, "missing array 'samples'");
  for (size_t i = 0; i < j["samples"].size(); ++i) {
    const auto& s = j["samples"][i];
    const std::string where = source + ": samples[" + std::to_string(i) + "]";
    if (!s.is_object()) throw Error(where, "expected an object");
    check_known_keys(s, {"phase", "bits", "batch", "tokens", "context", "seconds"}, where);
    ProfileSample x;
    x.phase = parse_phase(s.value("phase", nlohmann::json()), where);
    x.bits = s.contains("bits") && s["bits"] == 0 ? 0 : width_from_json(s.value("bits", nlohmann::json()), where, "bits");
    if (x.bits != 0 && std::find(p.widths.begin(), p.widths.end(), x.bits) == p.widths.end())
      throw Error(where, "'bits' " + std::to_string(x.bits) + " is not one of the profile's widths (0: the head)");
    x.batch = get_count(s, "batch", where, 1);
    x.tokens = get_count(s, "tokens", where, 1);
    x.context = get_count(s, "context", where, 0);
    if (!s.contains("seconds") || !s["seconds"].is_number()) throw Error(where, "missing number 'seconds'");
    x.seconds = s["seconds"].get<double>();
    if (!(std::isfinite(x.seconds) && x.seconds > 0)) throw Error(where, "'seconds' must be positive (a finite number of seconds)");
    p.samples.push_back(x);
  }
  fit_profile(p);
  return p;
}

LatencyProfile load_profile(const std::filesystem::path& path) {
  return profile_from_json(read_json_file(path), path.string());
}

}  // namespace fsq::plan
