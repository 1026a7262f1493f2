#include "formats/export/gguf_hf_source.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/half.h"
#include "formats/architectures.h"
#include "formats/export/gguf_hf_metadata.h"
#include "formats/export/gguf_hf_names.h"

namespace fsq {
namespace {

GgmlType ggml_type_of_dtype(DType d) {
  switch (d) {
    case DType::F16: return GgmlType::F16;
    case DType::BF16: return GgmlType::BF16;
    default: return GgmlType::F32;
  }
}

// llama.cpp's converter drops RoPE frequency buffers that old checkpoints saved.
bool is_rope_buffer(const std::string& name) { return name.ends_with("rotary_emb.inv_freq"); }

nlohmann::json read_config_json(const std::filesystem::path& dir) {
  std::ifstream in(dir / "config.json");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error((dir / "config.json").string(), std::string("is not valid JSON: ") + e.what());
  }
}

}  // namespace

void decode_float_elements(DType dtype, const std::byte* src, float* dst, int64_t n, const std::string& where) {
  switch (dtype) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16:
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    default:
      throw Error(where, "is " + std::string(dtype_name(dtype)) + "; GGUF export reads F32, F16 and BF16 tensors");
  }
}

HfFolderSource::HfFolderSource(const std::filesystem::path& dir)
    : checkpoint_(Checkpoint::open(dir)), name_(dir.string()) {
  const ModelConfig& config = checkpoint_.config();
  const ArchSpec& arch = arch_spec_for(config.architecture);
  int64_t parameters = 0;
  const auto& shards = checkpoint_.shards();
  for (size_t s = 0; s < shards.size(); ++s) {
    std::vector<const TensorView*> views;
    for (const TensorView& v : shards[s]->tensors()) views.push_back(&v);
    std::sort(views.begin(), views.end(), [](auto* a, auto* b) { return a->name < b->name; });
    for (const TensorView* v : views) {
      if (is_rope_buffer(v->name)) continue;
      const std::string where = shards[s]->path().string() + ": tensor '" + v->name + "'";
      const LinearSpec* linear = nullptr;
      const std::string gguf = gguf_name_of_hf(arch, v->name, &linear);
      if (gguf.empty())
        throw Error(where, "has no llama.cpp name in the " + config.architecture + " layout fsq exports");
      if (v->dtype != DType::F32 && v->dtype != DType::F16 && v->dtype != DType::BF16)
        throw Error(where, "is " + std::string(dtype_name(v->dtype)) +
                               "; GGUF export reads F32, F16 and BF16 tensors");
      if (v->shape.empty() || v->shape.size() > 2) throw Error(where, "is not a vector or a matrix");
      const int64_t head_dim = gguf_permuted_head_dim(arch, linear, config);
      if (head_dim > 0 && (head_dim % 2 != 0 || v->shape[0] % head_dim != 0))
        throw Error(where, "has " + std::to_string(v->shape[0]) + " rows, not whole heads of " +
                               std::to_string(head_dim) + " (even) as llama.cpp's RoPE layout needs");
      tensors_.push_back({gguf, ggml_type_of_dtype(v->dtype), {v->shape.rbegin(), v->shape.rend()}, false, ""});
      origins_.push_back({v, s, head_dim});
      parameters += v->numel();
    }
  }
  std::filesystem::path folder = std::filesystem::absolute(dir).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();  // "model/"
  metadata_ = gguf_metadata_for_hf(dir, read_config_json(dir), config, folder.filename().string(), parameters);
}

void HfFolderSource::read_rows(size_t i, int64_t first, int64_t count, float* out) const {
  const Origin& o = origins_[i];
  const int64_t cols = tensors_[i].dims[0];
  const size_t row_bytes = static_cast<size_t>(cols) * dtype_size(o.view->dtype);
  if (o.permuted_head_dim > 0 && tensors_[i].dims.size() == 1) {  // a q/k bias: its elements are the rows
    std::vector<float> hf(static_cast<size_t>(cols));
    decode_float_elements(o.view->dtype, o.view->data, hf.data(), cols, name_);
    for (int64_t e = 0; e < cols; ++e) out[e] = hf[static_cast<size_t>(hf_row_of_gguf_row(e, o.permuted_head_dim))];
    return;
  }
  for (int64_t r = first; r < first + count; ++r) {
    const int64_t src = o.permuted_head_dim > 0 ? hf_row_of_gguf_row(r, o.permuted_head_dim) : r;
    decode_float_elements(o.view->dtype, o.view->data + static_cast<size_t>(src) * row_bytes,
                          out + (r - first) * cols, cols, name_);
  }
}

std::vector<std::string> HfFolderSource::notes() const {
  if (has_tokenizer()) return {};
  return {name_ + " has no tokenizer.model or tokenizer.json: the GGUF has no tokenizer (llama.cpp loads it, but "
                  "cannot tokenize text with it)"};
}

void HfFolderSource::release(size_t i) const { checkpoint_.shards()[origins_[i].shard]->drop_resident_pages(); }

}  // namespace fsq
