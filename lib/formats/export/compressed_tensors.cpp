// export_compressed_tensors: checks every quantized linear, groups the linears by scheme,
// re-lays the zero points along the output dimension, converts dense tensors to the model
// dtype and writes the folder through AtomicDir. compressed_tensors.h documents the layout.
#include "formats/export/compressed_tensors.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "common/half.h"
#include "formats/export/export_folder.h"
#include "formats/quant/bitpack.h"
#include "common/byte_view.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensors are written in host byte order");

// The "weights" arguments of the config group of quant type `q` (one group per fsq quant type).
json scheme_weights(const UniformQuant& q) {
  const bool channel = q.group_size == 0;
  return {{"num_bits", q.bits},
          {"type", "int"},
          {"symmetric", q.symmetric},
          {"group_size", channel ? json(nullptr) : json(q.group_size)},
          {"strategy", channel ? "channel" : "group"},
          {"dynamic", false},
          {"actorder", nullptr},
          {"block_structure", nullptr},
          {"observer", "minmax"},
          {"observer_kwargs", json::object()}};
}

std::string module_of(const std::string& name) { return name.substr(0, name.rfind('.')); }
std::string leaf_of(const std::string& name) { return name.substr(name.rfind('.') + 1); }

// vLLM fuses q/k/v (and gate/up) of a layer into one linear that needs one scheme.
std::vector<std::string> fused_shard_notes(const PackedCheckpoint& src) {
  const std::vector<std::set<std::string>> fused = {{"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"}};
  std::map<std::pair<std::string, size_t>, std::set<std::string>> types;  // (module, fused set) -> types
  for (const PackedLinear& l : src.linears())
    for (size_t f = 0; f < fused.size(); ++f)
      if (fused[f].contains(leaf_of(l.name))) types[{module_of(l.name), f}].insert(l.quant_type);
  std::vector<std::string> notes;
  for (const auto& [key, set] : types)
    if (set.size() > 1)
      notes.push_back(key.first + ": " + (key.second == 0 ? "q/k/v" : "gate/up") +
                      " have different schemes; vLLM fuses them and needs one (transformers loads it)");
  return notes;
}

// Zero points [rows, groups] (fsq's unsigned values, .qzeros) as compressed-tensors stores
// them: one bit stream per group down the rows, words [ceil(rows * bits / 32), groups].
std::vector<uint32_t> pack_zero_points_by_column(const PackedLinear& l) {
  const int64_t rows = l.rows, groups = l.quant.group_count(l.cols);
  const auto* zeros = reinterpret_cast<const uint8_t*>(l.qzeros->data);
  std::vector<uint8_t> by_group(static_cast<size_t>(rows * groups));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) by_group[g * rows + r] = zeros[r * groups + g];
  const std::vector<uint32_t> packed = pack_rows(by_group, groups, rows, l.quant.bits);
  const int64_t words = packed_words_per_row(l.quant.bits, rows);
  std::vector<uint32_t> out(packed.size());
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t w = 0; w < words; ++w) out[w * groups + g] = packed[g * words + w];
  return out;
}

// What a linear's export computes; the codes (fsq's .qweight words, unchanged) and fp16
// scales are written straight from the mapped checkpoint.
struct CtLinear {
  std::vector<float> wide_scales;     // F32 exports only: fsq's fp16 scales widened exactly
  std::vector<uint32_t> zero_points;  // empty when symmetric
  std::vector<int64_t> shape;         // [rows, cols]
};

CtLinear to_compressed_tensors(const PackedLinear& l, DType dtype) {
  CtLinear c;
  c.shape = {l.rows, l.cols};
  if (dtype == DType::F32) {
    const auto* half = reinterpret_cast<const uint16_t*>(l.scales->data);
    c.wide_scales.resize(l.scales->nbytes / sizeof(uint16_t));
    for (size_t i = 0; i < c.wide_scales.size(); ++i) c.wide_scales[i] = f16_to_f32(half[i]);
  }
  if (!l.quant.symmetric) c.zero_points = pack_zero_points_by_column(l);
  return c;
}

// Module names of the 2-D dense weights: lm_head (always: a tied head has no tensor of its
// own but is a linear module) and linears left unquantized.
json ignored_modules(const PackedCheckpoint& src) {
  std::set<std::string> names = {"lm_head"};
  for (const TensorView* t : src.dense_tensors())
    if (const auto module = weight_module_name(t->name);
        t->shape.size() == 2 && module && t->name.find("embed") == std::string::npos)
      names.insert(*module);
  return names;
}

}  // namespace

std::string compressed_tensors_unsupported_reason(const PackedLinear& l) {
  if (l.is_lut())
    return "its codes index per-row lookup tables (SqueezeLLM); pack-quantized stores uniform integer codes only";
  if (l.is_w8a8())
    return "it quantizes activations at run time (W8A8); the pack-quantized export is weight-only";
  return "";
}

CompressedTensorsReport export_compressed_tensors(const PackedCheckpoint& src, const fs::path& out,
                                                  const CompressedTensorsOptions& options) {
  // Everything that can be refused is refused before the staging folder exists.
  AtomicDir::check_destination(out);
  const std::string where = src.dir().string();
  if (options.dtype != DType::F16 && options.dtype != DType::F32)
    throw Error(where, "compressed-tensors exports are written as float16 or float32");
  if (src.linears().empty()) throw Error(where, "has no quantized linear; nothing to export as compressed-tensors");
  if (src.has_intonly_ranges())
    throw Error(where, "is an integer-only checkpoint (its activations are requantized with calibrated ranges); "
                       "compressed-tensors has no such scheme");
  for (const PackedLinear& l : src.linears()) {
    const std::string reason = compressed_tensors_unsupported_reason(l);
    if (!reason.empty())
      throw Error(where, "linear " + quote_name(l.name) + " (" + l.quant_type +
                             ") cannot be exported as compressed-tensors: " + reason);
  }

  CompressedTensorsReport report;
  report.notes = fused_shard_notes(src);
  std::map<std::string, std::pair<json, json>> groups;  // quant type -> (weights, targets)
  for (const PackedLinear& l : src.linears()) {
    auto [it, fresh] = groups.try_emplace(l.quant_type, scheme_weights(l.quant), json::array());
    it->second.second.push_back(l.name);
    if (fresh && l.quant.bits != 4 && l.quant.bits != 8)
      report.notes.push_back(l.quant_type + ": vLLM's compressed-tensors kernels take 4 and 8 bits only "
                                            "(transformers loads " + std::to_string(l.quant.bits) + "-bit codes)");
  }
  const bool asymmetric = std::any_of(src.linears().begin(), src.linears().end(),
                                      [](const PackedLinear& l) { return !l.quant.symmetric; });
  if (asymmetric)
    report.notes.push_back(
        groups.size() == 1
            ? "asymmetric: transformers (5.24) loads it with quantization_config=CompressedTensorsConfig(dequantize=True) "
              "only (its default route expects unpacked zero points)"
            : "asymmetric with several schemes: transformers (5.24) loads asymmetric layers only with dequantize=True, "
              "which decodes every layer with the first group's scheme, so it computes wrong weights; quantize with "
              "--sym for transformers (vLLM matches each layer's scheme)");
  json config_groups = json::object();
  int index = 0;
  for (const auto& [type, scheme] : groups) {
    config_groups["group_" + std::to_string(index++)] = {{"targets", scheme.second},
                                                         {"weights", scheme.first},
                                                         {"input_activations", nullptr},
                                                         {"output_activations", nullptr},
                                                         {"format", "pack-quantized"}};
    report.schemes.push_back(type);
  }
  json config = src.config();
  config.erase("quantization_config");  // fsq's own
  config["torch_dtype"] = options.dtype == DType::F16 ? "float16" : "float32";
  config["quantization_config"] = {{"quant_method", "compressed-tensors"},
                                   {"format", "pack-quantized"},
                                   {"quantization_status", "compressed"},
                                   {"config_groups", config_groups},
                                   {"ignore", ignored_modules(src)},
                                   {"kv_cache_scheme", nullptr},
                                   {"global_compression_ratio", nullptr}};

  std::vector<std::vector<std::byte>> dense;
  dense.reserve(src.dense_tensors().size());  // no reallocation: tensors point into them
  std::vector<TensorToWrite> tensors;
  for (const TensorView* t : src.dense_tensors()) {
    dense.push_back(export_dense_tensor(*t, options.dtype, where, "this compressed-tensors export"));
    tensors.push_back({t->name, options.dtype, t->shape, dense.back()});
  }
  std::deque<std::vector<std::byte>> head;
  add_dequantized_head(src, options.dtype, where, "this compressed-tensors export", head, tensors);
  std::vector<CtLinear> linears;
  linears.reserve(src.linears().size());
  for (const PackedLinear& l : src.linears()) {
    const CtLinear& c = linears.emplace_back(to_compressed_tensors(l, options.dtype));
    const int64_t groups_per_row = l.quant.group_count(l.cols);
    tensors.push_back({l.name + ".weight_packed", DType::I32, l.qweight->shape, {l.qweight->data, l.qweight->nbytes}});
    const std::span<const std::byte> scales = options.dtype == DType::F16
                                                  ? std::span<const std::byte>(l.scales->data, l.scales->nbytes)
                                                  : bytes_of(c.wide_scales);
    tensors.push_back({l.name + ".weight_scale", options.dtype, {l.rows, groups_per_row}, scales});
    tensors.push_back({l.name + ".weight_shape", DType::I64, {2}, bytes_of(c.shape)});
    if (!c.zero_points.empty())
      tensors.push_back({l.name + ".weight_zero_point", DType::I32,
                         {packed_words_per_row(l.quant.bits, l.rows), groups_per_row}, bytes_of(c.zero_points)});
  }
  report.linears = static_cast<int64_t>(linears.size());

  write_export_folder(src, out, tensors, config, "compressed-tensors");
  return report;
}

}  // namespace fsq
