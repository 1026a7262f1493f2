#include "quantize/quantize_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/quant/lut_quant.h"
#include "formats/quant/quant_types.h"
#include "quantize/head_quant.h"
#include "runtime/causal_attention.h"
#include "runtime/rope_size.h"

namespace fsq {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// The process with LibTorch and OpenBLAS loaded, before any work: 153 MiB measured at the start
// of `fsq quantize` (1 and 2 threads), 166 MiB at the end of an RTN run on stories260K.
constexpr int64_t kRuntimeBytes = 176 * kMiB;
// What a calibrated pass holds beyond its tensors: the tokenizer, LibTorch/OpenMP working
// buffers of the first forwards, and heap the allocator keeps between layers. Measured as
// AWQ's peak RSS minus the other terms, now that source pages are given back after each layer:
// on stories260K (32 x 256 calibration) 43-107 MiB across runs (peaks of 288-352 MiB: what glibc
// keeps of freed activations varies), on SmolLM2-135M (8 x 256) at most 43. 128 MiB keeps the
// plan above every measured peak; SmolLM2's plan is then 1.18-1.33x its peak (its bracket,
// tests/tools/fsq/cli_support.h, says why it is wider than the 7B's 1.12x).
constexpr int64_t kCalibrationRuntimeBytes = 128 * kMiB;
constexpr int64_t kF32 = 4;
// Anonymous memory that loading the shell takes beyond its matrices (LibTorch's and OpenMP's
// first allocations, the finiteness check's slices): 70 MiB measured on the ci-1.4gb random
// model (scripts/make-random-checkpoint.py), whose peak RSS comes right there, with the
// source's embedding and head pages still mapped.
constexpr int64_t kShellLoadBytes = 64 * kMiB;

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

}  // namespace

std::set<std::string> linear_weight_names(const ArchSpec& arch, int64_t layers) {
  std::set<std::string> names;
  for (int64_t i = 0; i < layers; ++i)
    for (const auto& spec : arch.linears) names.insert(layer_name(spec.pattern, i) + ".weight");
  return names;
}

QuantizePlan plan_quantize(const Checkpoint& ckpt, const QuantizeShape& s) {
  const ModelConfig& c = ckpt.config();
  const ArchSpec& arch = arch_spec_for(c.architecture);
  QuantizePlan p;
  p.layers = c.num_layers;
  const std::set<std::string> quantized = linear_weight_names(arch, c.num_layers);
  const std::optional<UniformQuant> head_quant = head_quant_for_bits(s.head_bits);
  const std::set<std::string> head = head_quant ? head_weight_names(arch, ckpt) : std::set<std::string>{};
  int64_t dense_bytes = 0, quantized_source_bytes = 0;
  double packed_bits = 0, head_bits = 0;
  for (const TensorView* v : ckpt.tensors()) {
    p.source_bytes += static_cast<int64_t>(v->nbytes);
    if (head.count(v->name) && v->shape.size() == 2) {
      const UniformQuant q = quant_for_columns(*head_quant, v->shape[1]);
      p.head_type = uniform_quant_name(q);
      p.head_parameters += v->numel();
      head_bits += static_cast<double>(v->numel()) * bits_per_weight(q, v->shape[1]);
    } else if (quantized.count(v->name) && v->shape.size() == 2) {
      p.quantized_parameters += v->numel();
      quantized_source_bytes += static_cast<int64_t>(v->nbytes);
      p.linears += 1;
      const int64_t rows = v->shape[0], cols = v->shape[1];
      packed_bits += static_cast<double>(v->numel()) *
                     (s.lut_bits != 0 ? lut_bits_per_weight(s.lut_bits, rows, cols,
                                                            std::llround(s.sparse_fraction * static_cast<double>(v->numel())))
                                      : bits_per_weight(quant_for_columns(s.quant, cols), cols));
    } else {
      p.dense_parameters += v->numel();
      dense_bytes += static_cast<int64_t>(v->nbytes);
      p.not_quantized.emplace_back(v->name, static_cast<int64_t>(v->nbytes));
    }
  }
  p.bits_per_weight = p.quantized_parameters ? packed_bits / static_cast<double>(p.quantized_parameters) : 0;
  p.head_bytes = static_cast<int64_t>(std::ceil(head_bits / 8.0));
  p.output_bytes = static_cast<int64_t>(std::ceil(packed_bits / 8.0)) + p.head_bytes + dense_bytes;
  const int64_t h = c.hidden_size, inter = c.intermediate_size, hq = c.num_heads * c.head_dim;
  const int64_t layer_params = p.quantized_parameters / std::max<int64_t>(1, c.num_layers) + 2 * h;

  p.fisher_pass = s.fisher_pass_bytes;
  p.runtime = kRuntimeBytes;
  p.mapped_layer = quantized_source_bytes / std::max<int64_t>(1, c.num_layers);
  p.mapped_whole = p.source_bytes - quantized_source_bytes;
  p.mapped_fisher = s.fisher_file_bytes;
  // The model shell (loaded by every method): the embedding, and the head when untied, in f32;
  // while it loads, kShellLoadBytes more.
  p.shell = (c.tie_word_embeddings ? 1 : 2) * c.vocab_size * h * kF32;
  p.shell_load = kShellLoadBytes;
  // The fp layer, the pass's rewritten copy (the stored values that carry quantized inputs to
  // the next layer) and one byte of codes per weight. llama-2-7b shape (2 layers, bf16), rtn
  // w4g128, 2 threads: 2778 MiB anonymous measured, 2910 predicted.
  p.layer = layer_params * (2 * kF32 + 1);
  // GPTQ: every group's Hessian (f32) and, for the largest, its damped inverse factor made in
  // double (gptq_inverse_hessian_factor: the matrix, its Cholesky factor, the inverse and the
  // inverse's factor). The same 7B shape with --gptq, 8 x 512: 8114 MiB measured.
  int64_t hessian_floats = 0, largest_hessian = 0;
  for (const LinearGroup& group : arch.groups) {
    const TensorView* first = ckpt.find(layer_name(arch.linear(group.roles.front()).pattern, 0) + ".weight");
    const int64_t cols = first != nullptr && first->shape.size() == 2 ? first->shape[1] : 0;
    hessian_floats += cols * cols;
    largest_hessian = std::max(largest_hessian, cols * cols);
  }
  if (s.gptq) p.gptq = hessian_floats * kF32 + 4 * largest_hessian * 8;
  // The checkpoint is written one group at a time (formats/packed_checkpoint.h): a saved
  // layer's codes (one byte per weight) and their packed copy, or a quantized embedding/head:
  // an f32 copy of the matrix, its codes and their packed copy.
  const int64_t layers = std::max<int64_t>(1, c.num_layers);
  const int64_t layer_group =
      p.quantized_parameters / layers + static_cast<int64_t>(std::ceil(packed_bits / 8.0)) / layers;
  int64_t largest_head = 0;
  for (const std::string& name : head) largest_head = std::max(largest_head, ckpt.get(name).numel());
  const int64_t head_group = largest_head * (kF32 + 1) + p.head_bytes;
  p.assembled = std::max(layer_group, head_group);
  if (s.calibrated) {
    p.shell += rope_table_bytes(rope_table_positions(s.seq_len, 0, c.max_position_embeddings), c.head_dim, kF32);
    p.calibration_runtime = kCalibrationRuntimeBytes;
    const int64_t tokens = s.samples * s.seq_len;
    // hidden in/out, and each group's input twice (as captured and scaled for the clip search)
    p.activations = tokens * (2 * h + 2 * (2 * h + hq + inter)) * kF32;
    // One micro-batch of block forward (projections, MLP intermediates, attention scores) and,
    // for a search, the block output for the reference and a candidate. Without a search only
    // layer forwards run, whose scores take blocks of at most kAttentionScoresBlockBytes
    // (SmolLM2 RTN --gptq, 16 x 512: peak 1215 MiB, predicted 1321; stories260K squeezellm
    // --gptq: 249-281 MiB, predicted 355).
    const int64_t block_forward = s.batch * s.seq_len * (4 * h + 3 * inter) * kF32;
    const int64_t scores = s.batch * s.seq_len * 2 * c.num_heads * s.seq_len * kF32;
    p.search = s.searches ? 2 * tokens * h * kF32 + block_forward + scores
                          : block_forward + std::min(scores, kAttentionScoresBlockBytes);
  }
  return p;
}

std::string QuantizeShape::quant_name() const {
  if (lut_bits != 0) return lut_quant_name(lut_bits);
  if (act_quant != ActivationQuant::None) return w8a8_quant_name(act_quant);
  return uniform_quant_name(quant);
}

int64_t QuantizePlan::not_quantized_bytes() const {
  int64_t total = 0;
  for (const auto& [name, bytes] : not_quantized) total += bytes;
  return total;
}

nlohmann::json QuantizePlan::not_quantized_json() const {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& [name, bytes] : not_quantized) tensors.push_back({{"name", name}, {"bytes", bytes}});
  const double share = output_bytes > 0 ? static_cast<double>(not_quantized_bytes()) / static_cast<double>(output_bytes) : 0;
  return {{"tensors", tensors}, {"bytes", not_quantized_bytes()}, {"share_of_output", share}};
}

// The large tensors kept as in the source by name (embedding, head), the small ones counted.
std::string QuantizePlan::not_quantized_text() const {
  constexpr int64_t kNamedAbove = 1 << 20;
  std::string named;
  int64_t small = 0, small_bytes = 0;
  for (const auto& [name, bytes] : not_quantized) {
    if (bytes >= kNamedAbove) {
      named += (named.empty() ? "" : ", ") + name + " " + mib(bytes);
    } else {
      small += 1;
      small_bytes += bytes;
    }
  }
  char share[64];
  std::snprintf(share, sizeof share, "%.1f%%",
                output_bytes > 0 ? 100.0 * static_cast<double>(not_quantized_bytes()) / static_cast<double>(output_bytes) : 0.0);
  return "  not quantized (kept as in the source, " + std::string(share) + " of the output): " +
         (named.empty() ? "" : named + ", ") + std::to_string(small) + " small tensors " + mib(small_bytes) + "\n";
}

nlohmann::json QuantizePlan::to_json() const {
  return {{"layers", layers}, {"linears", linears}, {"quantized_parameters", quantized_parameters},
          {"dense_parameters", dense_parameters}, {"bits_per_weight", bits_per_weight},
          {"output_bytes", output_bytes}, {"source_bytes", source_bytes},
          {"predicted_peak_bytes", peak()}, {"predicted_anonymous_bytes", anonymous_peak()},
          {"predicted_mapped_bytes", mapped_peak()}, {"not_quantized", not_quantized_json()},
          {"embedding_and_head", head_type.empty() ? nlohmann::json(nullptr)
                                                   : nlohmann::json{{"quant_type", head_type},
                                                                    {"parameters", head_parameters},
                                                                    {"bytes", head_bytes}}},
          {"memory", {{"runtime", runtime}, {"mapped_layer", mapped_layer}, {"mapped_whole", mapped_whole},
                      {"mapped_fisher", mapped_fisher}, {"shell", shell}, {"shell_load", shell_load}, {"layer", layer},
                      {"activations", activations}, {"search", search},
                      {"calibration_runtime", calibration_runtime}, {"assembled", assembled}, {"gptq", gptq},
                      {"fisher_pass", fisher_pass}}}};
}

std::string QuantizePlan::to_text(const QuantizeShape& s) const {
  char buf[1024];
  std::string out;
  std::snprintf(buf, sizeof buf,
                "plan: %s %s on %lld layers x %lld linears (%lld weights, %.3f bits/weight as stored)\n",
                s.method.c_str(), s.quant_name().c_str(), static_cast<long long>(layers),
                static_cast<long long>(linears / std::max<int64_t>(1, layers)),
                static_cast<long long>(quantized_parameters), bits_per_weight);
  out += buf;
  if (s.calibrated) {
    std::snprintf(buf, sizeof buf, "  calibration: %lld windows x %lld tokens, micro-batch %lld\n",
                  static_cast<long long>(s.samples), static_cast<long long>(s.seq_len), static_cast<long long>(s.batch));
    out += buf;
  }
  out += "  output: ~" + mib(output_bytes) + " (source " + mib(source_bytes) + ")\n";
  if (!head_type.empty()) {
    std::snprintf(buf, sizeof buf, "  embedding/head: %s (%.3f bits/weight), %s\n", head_type.c_str(),
                  head_parameters ? 8.0 * static_cast<double>(head_bytes) / static_cast<double>(head_parameters) : 0.0,
                  mib(head_bytes).c_str());
    out += buf;
  }
  out += not_quantized_text();
  if (fisher_pass > 0) out += "  Fisher pass first: predicted peak " + mib(fisher_pass) + "\n";
  out += "  predicted peak memory: " + mib(peak()) + ": anonymous " + mib(anonymous_peak()) + " and mapped source pages " +
         mib(mapped_peak()) + " (one layer at a time; the kernel may reclaim them)\n";
  if (fisher_pass >= anonymous_peak())
    out += "    anonymous: the Fisher pass, " + mib(fisher_pass) + "\n";
  else
    out += "    anonymous: runtime " + mib(runtime) + " + the larger of the layer loop with the embedding and head " +
           mib(shell + layer_loop()) + " (embedding/head " + mib(shell) + ", layer " + mib(layer) + ", activations " +
           mib(activations) + ", search " + mib(search) + (gptq > 0 ? ", GPTQ " + mib(gptq) : std::string()) +
           ", calibration working set " + mib(calibration_runtime) + ") and writing the output, one layer at a time, " +
           mib(assembled) + "\n";
  return out;
}

}  // namespace fsq
