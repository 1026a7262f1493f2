#include "runtime/eval/report.h"

#include <cstdarg>
#include <cstdio>

namespace fsq {
namespace {

using nlohmann::json;

json model_json(const ModelInfo& m) {
  json j = {{"path", m.path},
          {"weights_sha256", m.weights_sha256},
          {"architecture", m.architecture},
          {"parameters", m.parameters},
          {"max_position_embeddings", m.max_position_embeddings},
          {"load_seconds", m.load_seconds},
          {"matmuls", m.matmuls}};
  if (!m.decode_path.empty()) j["decode_path"] = m.decode_path;
  if (!m.prefill_path.empty()) j["prefill_path"] = m.prefill_path;
  if (!m.integer_ops.empty()) j["integer_only"] = m.integer_ops;
  if (!m.float_ops.empty()) j["float"] = m.float_ops;
  return j;
}

json speed_json(const SpeedResult& s) {
  json prefill = json::array(), decode = json::array();
  for (const auto& p : s.prefill)
    prefill.push_back({{"tokens", p.tokens}, {"seconds", p.seconds}, {"reps", p.reps},
                       {"tokens_per_s", p.tokens_per_s()}});
  for (const auto& d : s.decode)
    decode.push_back({{"batch", d.batch}, {"prompt", d.prompt}, {"steps", d.steps},
                      {"seconds", d.seconds}, {"reps", d.reps}, {"tokens_per_s", d.tokens_per_s()}});
  return {{"prefill", prefill}, {"decode", decode}};
}

// printf into a std::string, for aligned human-readable lines.
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string short_sha(const std::string& s) { return s.size() > 16 ? s.substr(0, 16) + "…" : s; }

}  // namespace

nlohmann::json report_json(const EvalReport& r) {
  json j;
  j["fsq_version"] = r.fsq_version;
  j["model"] = model_json(r.model);
  j["dtype"] = r.dtype;
  j["device"] = r.device;
  j["threads"] = r.threads;
  if (!r.thread_waits.empty()) j["thread_waits"] = r.thread_waits;
  if (r.tokenizer_sha256) j["tokenizer"] = {{"sha256", *r.tokenizer_sha256}, {"kind", r.tokenizer_kind.value_or("")}};
  if (r.dataset)
    j["dataset"] = {{"path", r.dataset->path}, {"sha256", r.dataset->sha256},
                    {"bytes", r.dataset->bytes}, {"tokens", r.dataset->tokens}};
  if (r.perplexity) {
    const auto& p = *r.perplexity;
    j["perplexity"] = {{"protocol", p.protocol}, {"seq_len", p.seq_len}, {"stride", p.stride},
                       {"bos_policy", p.bos_policy}, {"windows", p.windows},
                       {"total_windows", p.total_windows}, {"scored_tokens", p.scored_tokens},
                       {"batch_size", p.batch_size}, {"nll_sum", p.nll_sum},
                       {"mean_nll", p.mean_nll}, {"ppl", p.ppl}, {"seconds", p.seconds}};
  }
  if (r.compare) {
    const auto& c = *r.compare;
    j["compare"] = {{"reference", model_json(c.reference)}, {"tokenizer_match", c.tokenizer_match},
                    {"kl_direction", "KL(P_ref || P_model)"}, {"mean_kl", c.mean_kl},
                    {"p99_kl", c.p99_kl}, {"max_kl", c.max_kl},
                    {"top1_agreement", c.top1_agreement}, {"ref_ppl", c.ref_ppl},
                    {"ref_mean_nll", c.ref_mean_nll}, {"ppl_delta", c.ppl_delta}};
    if (!c.reference_cache.empty())
      j["compare"]["reference_cache"] = {{"path", c.reference_cache},
                                         {"hit", c.reference_cache_hit},
                                         {"trimmed_files", c.reference_cache_trimmed_files},
                                         {"trimmed_bytes", c.reference_cache_trimmed_bytes}};
  }
  if (r.speed) j["speed"] = speed_json(*r.speed);
  if (!r.speed_skipped.empty()) j["speed"] = {{"skipped", r.speed_skipped}};
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  if (!r.huge_pages.empty())
    j["weight_memory"] = {{"mapped_bytes", r.weight_memory_bytes}, {"transparent_huge_pages", r.huge_pages}};
  return j;
}

std::string report_text(const EvalReport& r) {
  std::string out;
  const auto& m = r.model;
  out += fmt("fsq %s eval\n", r.fsq_version.c_str());
  out += fmt("model      %s (%s, %lld params, weights sha256 %s)\n", m.path.c_str(),
             m.architecture.c_str(), static_cast<long long>(m.parameters), short_sha(m.weights_sha256).c_str());
  out += fmt("runtime    %s on %s, threads %d%s, load %.3f s\n", r.dtype.c_str(), r.device.c_str(), r.threads,
             r.thread_waits.empty() ? "" : (" (" + r.thread_waits + ")").c_str(), m.load_seconds);
  std::string matmuls;
  for (const auto& [kind, count] : m.matmuls)
    matmuls += (matmuls.empty() ? "" : "; ") + std::to_string(count) + " x " + kind;
  if (!matmuls.empty()) out += "matmuls    " + matmuls + "\n";
  if (!m.decode_path.empty()) out += "decoding   " + m.decode_path + "\n";
  if (!m.prefill_path.empty()) out += "prefill    " + m.prefill_path + "\n";
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!m.integer_ops.empty()) out += "integer    " + join(m.integer_ops) + "\n";
  if (!m.float_ops.empty()) out += "float      " + join(m.float_ops) + "\n";
  if (r.dataset)
    out += fmt("dataset    %s (%lld bytes, %lld tokens, sha256 %s)\n", r.dataset->path.c_str(),
               static_cast<long long>(r.dataset->bytes), static_cast<long long>(r.dataset->tokens),
               short_sha(r.dataset->sha256).c_str());
  if (r.tokenizer_sha256)
    out += fmt("tokenizer  %s, sha256 %s\n", r.tokenizer_kind.value_or("").c_str(),
               short_sha(*r.tokenizer_sha256).c_str());
  if (r.perplexity) {
    const auto& p = *r.perplexity;
    out += fmt("protocol   %s, seq_len %lld, stride %lld, %s\n", p.protocol.c_str(),
               static_cast<long long>(p.seq_len), static_cast<long long>(p.stride), p.bos_policy.c_str());
    out += fmt("windows    %lld of %lld, %lld scored tokens, batch %lld, %.2f s\n",
               static_cast<long long>(p.windows), static_cast<long long>(p.total_windows),
               static_cast<long long>(p.scored_tokens), static_cast<long long>(p.batch_size), p.seconds);
    out += fmt("perplexity %.4f (mean nll %.6f)\n", p.ppl, p.mean_nll);
  }
  if (r.compare) {
    const auto& c = *r.compare;
    out += fmt("reference  %s (weights sha256 %s; tokenizer: %s)\n", c.reference.path.c_str(),
               short_sha(c.reference.weights_sha256).c_str(), c.tokenizer_match.c_str());
    if (!c.reference_cache.empty())
      out += fmt("ref rows   %s %s\n", c.reference_cache_hit ? "read from" : "computed and saved to",
                 c.reference_cache.c_str());
    if (c.reference_cache_trimmed_files > 0)
      out += fmt("ref cache  deleted %lld older files (%.1f MB) to stay within --reference-cache-max-gib\n",
                 static_cast<long long>(c.reference_cache_trimmed_files),
                 static_cast<double>(c.reference_cache_trimmed_bytes) * 1e-6);
    out += fmt("ref ppl    %.4f (delta %+.4f)\n", c.ref_ppl, c.ppl_delta);
    out += fmt("KL(ref||m) mean %.6g, p99 %.6g, max %.6g; top-1 agreement %.4f\n", c.mean_kl,
               c.p99_kl, c.max_kl, c.top1_agreement);
  }
  if (r.speed) {
    for (const auto& p : r.speed->prefill)
      out += fmt("prefill    %5lld tokens: %10.1f tok/s (median of %d, %.4f s)\n",
                 static_cast<long long>(p.tokens), p.tokens_per_s(), p.reps, p.seconds);
    for (const auto& d : r.speed->decode)
      out += fmt("decode     batch %3lld: %10.1f tok/s (%lld steps after a %lld-token prompt, median of %d)\n",
                 static_cast<long long>(d.batch), d.tokens_per_s(), static_cast<long long>(d.steps),
                 static_cast<long long>(d.prompt), d.reps);
  }
  if (!r.speed_skipped.empty()) out += "speed      skipped: " + r.speed_skipped + "\n";
  if (!r.huge_pages.empty())
    out += fmt("weights    in %.1f MiB of huge-page chunks (transparent huge pages: %s%s)\n",
               double(r.weight_memory_bytes) / (1024.0 * 1024.0), r.huge_pages.c_str(),
               r.huge_pages == "never" ? "; decode reads weights slower in 4 KiB pages" : "");
  out += fmt("peak RSS   %.1f MiB\n", double(r.peak_rss_bytes) / (1024.0 * 1024.0));
  return out;
}

}  // namespace fsq
