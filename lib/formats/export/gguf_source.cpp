#include "formats/export/gguf_source.h"

#include "common/error.h"
#include "formats/gguf/dequantize.h"

namespace fsq {

int64_t GgufSourceTensor::rows() const {
  int64_t n = 1;
  for (size_t d = 1; d < dims.size(); ++d) n *= dims[d];
  return n;
}

void GgufExportSource::copy_blocks(size_t i, std::span<std::byte>) const {
  throw Error(name(), "tensor '" + tensors().at(i).name + "' has no blocks to copy");
}

const GgufValue* GgufExportSource::find(const std::string& key) const {
  const GgufMetadata& md = metadata();
  if (key_index_.size() != md.size()) {
    key_index_.clear();
    for (size_t k = 0; k < md.size(); ++k) key_index_.emplace(md[k].first, k);
  }
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &md[it->second].second;
}

const GgufSourceTensor* GgufExportSource::find_tensor(const std::string& tensor) const {
  const auto& all = tensors();
  if (tensor_index_.size() != all.size()) {
    tensor_index_.clear();
    for (size_t k = 0; k < all.size(); ++k) tensor_index_.emplace(all[k].name, k);
  }
  auto it = tensor_index_.find(tensor);
  return it == tensor_index_.end() ? nullptr : &all[it->second];
}

size_t GgufExportSource::tensor_index(const std::string& tensor) const {
  const GgufSourceTensor* t = find_tensor(tensor);
  if (t == nullptr) throw Error(name(), "has no tensor '" + tensor + "'");
  return static_cast<size_t>(t - tensors().data());
}

int64_t GgufExportSource::arch_int(const std::string& suffix, int64_t fallback) const {
  const GgufValue* arch = find("general.architecture");
  if (arch == nullptr || arch->type() != GgufType::STRING) return fallback;
  const GgufValue* v = find(std::get<std::string>(arch->v) + "." + suffix);
  if (v == nullptr) return fallback;
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<int64_t>(x);
        return fallback;
      },
      v->v);
}

GgufFileSource::GgufFileSource(const GgufFile& file) : file_(&file) {
  for (const GgufTensorInfo& t : file_->tensors()) {
    if (!can_dequantize(t.type))
      throw Error(file_->name(), "tensor '" + t.name + "' is " + std::string(ggml_type_name(t.type)) +
                                     ", which fsq cannot dequantize");
    tensors_.push_back({t.name, t.type, t.dims, false, ""});
  }
}

void GgufFileSource::read_rows(size_t i, int64_t first, int64_t count, float* out) const {
  const GgufTensorInfo& t = file_->tensors()[i];
  const int64_t cols = t.dims[0];
  const size_t row_bytes = t.nbytes / static_cast<size_t>(t.n_elements / cols);
  dequantize_row(t.type, t.data + static_cast<size_t>(first) * row_bytes, out, count * cols);
}

}  // namespace fsq
