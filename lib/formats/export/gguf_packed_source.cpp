#include "formats/export/gguf_packed_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "formats/architectures.h"
#include "formats/export/gguf_hf_metadata.h"
#include "formats/export/gguf_hf_names.h"
#include "formats/export/gguf_hf_source.h"

namespace fsq {
namespace {

void put_half(std::byte* dst, uint16_t h) { std::memcpy(dst, &h, 2); }

std::string grid_list() { return "w4g32s (Q4_0), w4g32a (Q4_1) and w8g32s (Q8_0)"; }

}  // namespace

std::optional<GgmlType> gguf_type_of_grid(const UniformQuant& q) {
  if (q.group_size != kQK) return std::nullopt;
  if (q.bits == 4) return q.symmetric ? GgmlType::Q4_0 : GgmlType::Q4_1;
  if (q.bits == 8 && q.symmetric) return GgmlType::Q8_0;
  return std::nullopt;
}

int64_t encode_grid_row(const QuantizedMatrix& m, int64_t hf_row, GgmlType type, std::byte* dst, float* max_shift) {
  const int64_t groups = m.groups();
  const size_t block_bytes = ggml_type_info(type).type_size;
  int64_t rounded = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const size_t slot = static_cast<size_t>(hf_row * groups + g);
    const uint8_t* q = m.codes.data() + hf_row * m.cols + g * kQK;
    std::byte* b = dst + static_cast<size_t>(g) * block_bytes;
    put_half(b, m.scales[slot]);  // d: the group's fp16 scale, as stored
    switch (type) {
      case GgmlType::Q8_0:
        for (int j = 0; j < kQK; ++j) b[2 + j] = static_cast<std::byte>(static_cast<int8_t>(q[j] - 128));
        break;
      case GgmlType::Q4_1: {
        // m = -z s: exact in f32 (at most 15 significant bits), then to fp16.
        const float offset = -static_cast<float>(m.zeros[slot]) * f16_to_f32(m.scales[slot]);
        const uint16_t h = f32_to_f16(offset);
        if (f16_to_f32(h) != offset) {
          ++rounded;
          if (max_shift) *max_shift = std::max(*max_shift, std::fabs(f16_to_f32(h) - offset));
        }
        put_half(b + 2, h);
        for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<std::byte>(q[j] | (q[j + 16] << 4));
        break;
      }
      default:  // Q4_0
        for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<std::byte>(q[j] | (q[j + 16] << 4));
    }
  }
  return rounded;
}

PackedGgufSource::PackedGgufSource(const std::filesystem::path& dir)
    : packed_(PackedCheckpoint::open(dir)),
      config_(parse_model_config(packed_.config(), (dir / kPackedConfigFile).string())),
      name_(dir.string()) {
  const ArchSpec& arch = arch_spec_for(config_.architecture);
  if (packed_.has_intonly_ranges())
    throw Error(name_, "is an integer-only checkpoint (--method intonly), which GGUF cannot hold");
  struct Entry {
    std::string hf;
    Origin origin;
    GgufSourceTensor tensor;
  };
  std::vector<Entry> entries;
  auto add_matrix = [&](const PackedLinear& l, bool head) {
    const std::string hf = l.name + ".weight";
    const std::optional<GgmlType> grid = l.is_lut() || l.is_w8a8() ? std::nullopt : gguf_type_of_grid(l.quant);
    if (!grid && !head)
      throw Error(name_, l.name + " is " + l.quant_type + "; GGUF export carries " + grid_list() +
                             " linears over (fsq quantize --method rtn --bits 4 or 8 --group-size 32, --sym for Q4_0/Q8_0)");
    GgufSourceTensor t{"", grid ? *grid : GgmlType::F32, {l.cols, l.rows}, grid.has_value(), ""};
    t.note = grid ? l.quant_type + " carried as " + std::string(ggml_type_name(*grid))
                  : l.quant_type + " (no llama.cpp grid): decoded, then typed by --type";
    entries.push_back({hf, {&l, nullptr, 0}, std::move(t)});
    if (!grid) notes_.push_back(l.name + " is " + l.quant_type + ", not one of " + grid_list() +
                                ": decoded as fsq decodes it and written as --type gives");
  };
  for (const PackedLinear& l : packed_.linears()) add_matrix(l, false);
  for (const PackedLinear& l : packed_.head_matrices()) add_matrix(l, true);
  for (const TensorView* v : packed_.dense_tensors()) {
    if (v->shape.empty() || v->shape.size() > 2)
      throw Error(name_, "tensor '" + v->name + "' is not a vector or a matrix");
    const GgmlType from = v->dtype == DType::F16 ? GgmlType::F16 : v->dtype == DType::BF16 ? GgmlType::BF16 : GgmlType::F32;
    entries.push_back({v->name, {nullptr, v, 0}, {"", from, {v->shape.rbegin(), v->shape.rend()}, false, ""}});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.hf < b.hf; });
  int64_t parameters = 0;
  for (Entry& e : entries) {
    const LinearSpec* linear = nullptr;
    e.tensor.name = gguf_name_of_hf(arch, e.hf, &linear);
    if (e.tensor.name.empty())
      throw Error(name_, "tensor '" + e.hf + "' has no llama.cpp name in the " + config_.architecture + " layout");
    e.origin.permuted_head_dim = gguf_permuted_head_dim(arch, linear, config_);
    int64_t n = 1;
    for (int64_t d : e.tensor.dims) n *= d;
    parameters += n;
    tensors_.push_back(std::move(e.tensor));
    origins_.push_back(e.origin);
  }
  metadata_ = gguf_metadata_for_hf(dir, packed_.config(), config_,
                                   std::filesystem::absolute(dir).lexically_normal().filename().string(), parameters);
}

void PackedGgufSource::open_tensor(size_t i) const {
  if (origins_[i].linear != nullptr) open_matrix_ = unpack_linear(*origins_[i].linear);
}

void PackedGgufSource::release(size_t) const {
  open_matrix_ = QuantizedMatrix{};
  packed_.weights().drop_resident_pages();
}

void PackedGgufSource::read_rows(size_t i, int64_t first, int64_t count, float* out) const {
  const Origin& o = origins_[i];
  const int64_t cols = tensors_[i].dims[0];
  auto hf_row = [&](int64_t r) { return o.permuted_head_dim > 0 ? hf_row_of_gguf_row(r, o.permuted_head_dim) : r; };
  if (o.dense != nullptr) {
    if (o.permuted_head_dim > 0 && tensors_[i].dims.size() == 1) {  // a q/k bias: its elements are the rows
      std::vector<float> hf(static_cast<size_t>(cols));
      decode_float_elements(o.dense->dtype, o.dense->data, hf.data(), cols, name_);
      for (int64_t e = 0; e < cols; ++e) out[e] = hf[static_cast<size_t>(hf_row(e))];
      return;
    }
    const size_t row_bytes = static_cast<size_t>(cols) * dtype_size(o.dense->dtype);
    for (int64_t r = first; r < first + count; ++r)
      decode_float_elements(o.dense->dtype, o.dense->data + static_cast<size_t>(hf_row(r)) * row_bytes,
                            out + (r - first) * cols, cols, name_);
    return;
  }
  // A quantized matrix on another grid: w = (q - zero) * scale, as dequantize_uniform.
  const QuantizedMatrix& m = open_matrix_;
  const int64_t group = m.quant.group_cols(m.cols), groups = m.groups();
  const int implicit_zero = 1 << (m.quant.bits - 1);
  for (int64_t r = first; r < first + count; ++r) {
    const int64_t src = hf_row(r);
    for (int64_t g = 0; g < groups; ++g) {
      const size_t slot = static_cast<size_t>(src * groups + g);
      const float scale = f16_to_f32(m.scales[slot]);
      const int zero = m.quant.symmetric ? implicit_zero : m.zeros[slot];
      for (int64_t j = g * group; j < (g + 1) * group; ++j)
        out[(r - first) * cols + j] = static_cast<float>(m.codes[static_cast<size_t>(src * m.cols + j)] - zero) * scale;
    }
  }
}

void PackedGgufSource::copy_blocks(size_t i, std::span<std::byte> out) const {
  const Origin& o = origins_[i];
  const GgmlType type = tensors_[i].type;
  const size_t row_bytes = static_cast<size_t>(*ggml_nbytes(type, open_matrix_.cols));
  for (int64_t r = 0; r < open_matrix_.rows; ++r) {
    const int64_t src = o.permuted_head_dim > 0 ? hf_row_of_gguf_row(r, o.permuted_head_dim) : r;
    rounded_groups_ += encode_grid_row(open_matrix_, src, type, out.data() + static_cast<size_t>(r) * row_bytes,
                                       &max_shift_);
  }
  if (type == GgmlType::Q4_1) q4_1_groups_ += open_matrix_.rows * open_matrix_.groups();
}

std::vector<std::string> PackedGgufSource::notes() const {
  std::vector<std::string> out = notes_;
  if (q4_1_groups_ > 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "Q4_1 holds -zero*scale as fp16: rounded in %lld of %lld groups (their weights moved by at most "
                  "%.3g); codes and scales are exact",
                  static_cast<long long>(rounded_groups_), static_cast<long long>(q4_1_groups_),
                  static_cast<double>(max_shift_));
    out.emplace_back(buf);
  }
  return out;
}

}  // namespace fsq
