#include "formats/export/gguf_export.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/half.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/export/gguf_source.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/gguf/quantize_blocks.h"
#include "formats/gguf/quantize_nearest.h"

namespace fsq {
namespace {

constexpr const char* kOutput = "output.weight";
constexpr const char* kTokenEmbd = "token_embd.weight";

bool is_output_head(const GgufExportSource& source, const std::string& name) {
  return name == kOutput || (name == kTokenEmbd && source.find_tensor(kOutput) == nullptr);
}

// The layer index of "blk.N.<name>"; -1 for other names.
int64_t block_index(const std::string& name) {
  if (!name.starts_with("blk.")) return -1;
  size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return -1;
  try {
    return std::stoll(name.substr(4, dot - 4));
  } catch (const std::exception&) {
    return -1;
  }
}

int64_t query_heads_per_kv_head(const GgufExportSource& source) {
  const int64_t heads = source.arch_int("attention.head_count", 1);
  const int64_t kv = source.arch_int("attention.head_count_kv", heads);
  return kv > 0 ? heads / kv : 1;
}

// Runs body(row) for rows [0, n) on `threads` threads, contiguous chunks (the result does
// not depend on the thread count: rows are independent). The first exception is rethrown.
void parallel_rows(int64_t n, int threads, const std::function<void(int64_t)>& body) {
  threads = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1)));
  if (threads == 1) {
    for (int64_t r = 0; r < n; ++r) body(r);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int64_t r = n * t / threads; r < n * (t + 1) / threads; ++r) body(r);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

// Per-element weights of the block search. With calibration, E[x_j^2] of the input column:
// the expected squared output error of the row (diagonal approximation). Without, a proxy
// that favours large weights, sqrt(sigma^2 + w_i^2) with sigma^2 the row's mean square (the
// weighting llama.cpp uses inside its imatrix-free searches): on SmolLM2 Q4_0 it lowered KL
// against the F32 model from 0.328 (plain squared error) to 0.307, where llama-quantize's
// plain rounding gives 0.318 (4 chunks of 2048, scripts/gguf-compare.sh protocol).
// Fills `proxy` and returns it, or returns the column weights themselves; nullptr for the
// float types, which take no weights.
const float* element_weights(const std::vector<float>& x, const std::vector<float>& column, GgmlType to,
                             std::vector<float>& proxy) {
  if (ggml_type_info(to).block_size == 1) return nullptr;
  if (!column.empty()) return column.data();
  double s2 = 0;
  for (float v : x) s2 += static_cast<double>(v) * v;
  const auto sigma2 = static_cast<float>(s2 / static_cast<double>(x.size()));
  proxy.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) proxy[i] = std::sqrt(sigma2 + x[i] * x[i]);
  return proxy.data();
}

// `nearest`: a type can_round_nearest takes, rounded plainly (then `importance` is unused).
void write_row(GgmlType to, const float* x, int64_t n, const float* importance, bool nearest, std::byte* dst) {
  if (nearest) {
    round_row_nearest(to, {x, static_cast<size_t>(n)}, {dst, static_cast<size_t>(*ggml_nbytes(to, n))});
    return;
  }
  switch (to) {
    case GgmlType::F32: std::memcpy(dst, x, static_cast<size_t>(n) * 4); return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_f16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case GgmlType::BF16:  // round to nearest even, as convert_hf_to_gguf.py's --outtype bf16
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    default:
      quantize_row_gguf(to, {x, static_cast<size_t>(n)},
                        importance != nullptr ? std::span<const float>(importance, static_cast<size_t>(n))
                                              : std::span<const float>(),
                        {dst, static_cast<size_t>(*ggml_nbytes(to, n))});
  }
}


// One tensor decoded row by row from the source, (scaled,) and written in its planned type;
// sets t.weighted when importance weights were found for it.
void fill_converted(const GgufExportSource& source, size_t src_index, GgufTensorPlan& t,
                    const GgufExportOptions& options, std::span<std::byte> dst) {
  const int64_t cols = t.dims[0];
  const int64_t rows = source.tensors()[src_index].rows();
  std::vector<float> importance;
  if (options.importance && t.dims.size() >= 2 && ggml_type_info(t.to).block_size > 1) {
    importance = options.importance(t.name, cols);
    if (!importance.empty() && static_cast<int64_t>(importance.size()) != cols)
      throw Error("gguf export", "importance for '" + t.name + "' has " + std::to_string(importance.size()) +
                                     " columns, the tensor " + std::to_string(cols));
    t.weighted = !importance.empty();
  }
  const std::vector<float>* scale = nullptr;
  if (auto it = options.column_scale.find(t.name); it != options.column_scale.end()) scale = &it->second;
  if (auto it = options.norm_divisor.find(t.name); it != options.norm_divisor.end()) scale = &it->second;
  if (scale != nullptr && static_cast<int64_t>(scale->size()) != cols)
    throw Error("gguf export", "scales for '" + t.name + "' do not match its " + std::to_string(cols) + " columns");
  const bool divide = scale != nullptr && t.dims.size() == 1;
  if (scale != nullptr && !divide && !importance.empty())
    for (int64_t j = 0; j < cols; ++j) importance[j] /= (*scale)[j] * (*scale)[j];
  const size_t dst_row_bytes = dst.size() / static_cast<size_t>(rows);
  parallel_rows(rows, options.threads, [&](int64_t r) {
    std::vector<float> x(static_cast<size_t>(cols));
    source.read_rows(src_index, r, 1, x.data());
    if (scale != nullptr)
      for (int64_t j = 0; j < cols; ++j) x[j] = divide ? x[j] / (*scale)[j] : x[j] * (*scale)[j];
    std::vector<float> proxy;
    const bool nearest = options.rounding == GgufRounding::Nearest && can_round_nearest(t.to);
    write_row(t.to, x.data(), cols, nearest ? nullptr : element_weights(x, importance, t.to, proxy), nearest,
              dst.data() + static_cast<size_t>(r) * dst_row_bytes);
  });
}

}  // namespace

GgufExportPlan plan_gguf_export(const GgufExportSource& source, GgufRecipe recipe, bool has_importance, bool pure,
                                const std::vector<int>& layer_bits) {
  const GgufRecipeInfo& info = gguf_recipe_info(recipe);
  const std::string where = "fsq export --type " + std::string(info.name);
  GgufExportPlan plan;
  plan.recipe = recipe;
  plan.layer_bits = layer_bits;
  const int64_t n_layers = source.arch_int("block_count", 0);
  if (!layer_bits.empty() && static_cast<int64_t>(layer_bits.size()) != n_layers)
    throw Error(where, "the plan has " + std::to_string(layer_bits.size()) + " layers, " + source.name() + " has " +
                           std::to_string(n_layers) + ": it was made for another model");
  for (int b : layer_bits)
    if (!gguf_type_for_bits(b))
      throw Error(where, "the plan gives a layer " + std::to_string(b) +
                             " bits; GGUF layers take 2, 3, 4, 5, 6, 8 or 16");
  const int64_t n_gqa = query_heads_per_kv_head(source);
  bool base_fits_some_row = false;
  for (const auto& t : source.tensors()) {
    GgufTensorPlan p{t.name, t.type, GgmlType::F32, t.dims, "", false, t.carried};
    if (t.carried) {
      p.to = t.type;
      p.note = t.note;
      base_fits_some_row = true;
    } else if (t.dims.size() >= 2) {
      GgufTensorRole role{t.name, t.dims[0], block_index(t.name), n_layers, n_gqa, is_output_head(source, t.name),
                          has_importance, pure};
      if (!layer_bits.empty() && role.layer >= 0 && role.layer < n_layers) {
        const GgmlType want = *gguf_type_for_bits(layer_bits[static_cast<size_t>(role.layer)]);
        p.to = gguf_shape_fallback(want, role.cols);
        p.note = "plan: " + std::to_string(layer_bits[static_cast<size_t>(role.layer)]) + " bits" +
                 (p.to != want ? ", rows not whole " + std::string(ggml_type_name(want)) + " blocks" : "");
      } else {
        p.to = gguf_recipe_type(recipe, role, &p.note);
      }
      base_fits_some_row = base_fits_some_row || t.dims[0] % ggml_type_info(info.base).block_size == 0;
    }
    plan.tensors.push_back(std::move(p));
  }
  if (!base_fits_some_row)
    throw Error(where, "no weight matrix of " + source.name() + " has rows that are whole " +
                           std::string(ggml_type_name(info.base)) + " blocks (" +
                           std::to_string(ggml_type_info(info.base).block_size) + " elements)");
  return plan;
}

nlohmann::json GgufExportReport::to_json() const {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : plan.tensors) {
    nlohmann::json j = {{"name", t.name}, {"from", ggml_type_name(t.from)}, {"to", ggml_type_name(t.to)},
                        {"dims", t.dims}, {"importance_weighted", t.weighted}};
    if (t.carried) j["carried"] = true;
    if (!t.note.empty()) j["note"] = t.note;
    tensors.push_back(std::move(j));
  }
  nlohmann::json j = {{"type", gguf_recipe_info(plan.recipe).name},
          {"file_bytes", file_bytes},
          {"parameters", parameters},
          {"bits_per_weight", bits_per_weight},
          {"tensors", std::move(tensors)}};
  if (!plan.layer_bits.empty()) j["plan_bits_per_layer"] = plan.layer_bits;
  return j;
}

GgufExportReport export_gguf(const GgufExportSource& source, const GgufExportPlan& plan,
                             const std::filesystem::path& out, const GgufExportOptions& options) {
  GgufExportReport report;
  report.plan = plan;
  GgufWriter writer;
  // Keys llama-quantize wrote about the source's own quantization (quantize.imatrix.*) would
  // describe a file this is not.
  for (const auto& [key, value] : source.metadata())
    if (!key.starts_with("quantize.")) writer.set(key, value);
  for (const auto& [key, value] : options.extra_metadata) writer.set(key, value);
  writer.set("general.file_type", GgufValue{gguf_recipe_info(plan.recipe).file_type});
  writer.set("general.quantization_version", GgufValue{uint32_t{2}});
  if (!options.provenance.is_null()) writer.set("fsq.export", GgufValue{options.provenance.dump()});

  uint64_t data_bytes = 0;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const auto& t = plan.tensors[i];
    writer.add_tensor({t.name, t.dims, t.to});
    data_bytes += writer.tensor_bytes(i);
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    report.parameters += n;
  }

  writer.write(out, [&](size_t i, std::span<std::byte> dst) {
    auto& t = report.plan.tensors[i];
    const size_t src_index = source.tensor_index(t.name);
    source.open_tensor(src_index);
    if (t.carried) {
      source.copy_blocks(src_index, dst);
    } else {
      fill_converted(source, src_index, t, options, dst);
    }
    source.release(src_index);
    if (options.progress) options.progress(i + 1, plan.tensors.size());
  });
  report.file_bytes = std::filesystem::file_size(out);
  report.bits_per_weight = report.parameters > 0 ? 8.0 * static_cast<double>(data_bytes) / report.parameters : 0;
  return report;
}

GgufExportPlan plan_gguf_export(const GgufFile& source, GgufRecipe recipe, bool has_importance, bool pure,
                                const std::vector<int>& layer_bits) {
  return plan_gguf_export(GgufFileSource(source), recipe, has_importance, pure, layer_bits);
}

GgufExportReport export_gguf(const GgufFile& source, const GgufExportPlan& plan, const std::filesystem::path& out,
                             const GgufExportOptions& options) {
  return export_gguf(GgufFileSource(source), plan, out, options);
}

}  // namespace fsq
