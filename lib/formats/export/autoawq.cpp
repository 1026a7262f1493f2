// export_autoawq: checks that every quantized linear fits AutoAWQ GEMM, repacks codes and
// zero points into its [in, out/8] nibble layout, converts dense tensors to fp16 and writes
// the folder through AtomicDir. autoawq.h documents the layout and its sources.
#include "formats/export/autoawq.h"

#include <bit>
#include <map>
#include <set>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "formats/export/export_folder.h"
#include "formats/quant/quant_types.h"
#include "common/byte_view.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensors are written in host byte order");

// One linear in AutoAWQ's orientation ([in, out], words along out).
struct AwqLinear {
  std::string name;
  int64_t in = 0;
  int64_t out = 0;
  int64_t groups = 0;
  std::vector<uint32_t> qweight;  // [in, out / 8]
  std::vector<uint32_t> qzeros;   // [groups, out / 8]
  std::vector<uint16_t> scales;   // [groups, out], fp16 bits
};

// values: fsq orientation [rows = out, cols], one 4-bit value per byte. Returns words
// [cols, rows / 8]: word (c, j) holds values[8j + kAutoAwqNibbleColumn[i]][c] in nibble i.
std::vector<uint32_t> pack_transposed(const std::vector<uint8_t>& values, int64_t rows, int64_t cols) {
  const int64_t words_per_row = rows / kAutoAwqPackFactor;
  std::vector<uint32_t> words(static_cast<size_t>(cols * words_per_row), 0);
  for (int64_t j = 0; j < words_per_row; ++j) {
    for (int i = 0; i < kAutoAwqPackFactor; ++i) {
      const uint8_t* src = values.data() + (j * kAutoAwqPackFactor + kAutoAwqNibbleColumn[i]) * cols;
      const int shift = i * kAutoAwqBits;
      for (int64_t c = 0; c < cols; ++c) words[c * words_per_row + j] |= uint32_t{src[c]} << shift;
    }
  }
  return words;
}

AwqLinear to_awq(const PackedLinear& l) {
  const QuantizedMatrix m = unpack_linear(l);
  AwqLinear a;
  a.name = l.name;
  a.in = l.cols;
  a.out = l.rows;
  a.groups = m.groups();
  a.qweight = pack_transposed(m.codes, a.out, a.in);
  a.qzeros = pack_transposed(m.zeros, a.out, a.groups);
  a.scales.resize(m.scales.size());
  for (int64_t n = 0; n < a.out; ++n)
    for (int64_t g = 0; g < a.groups; ++g) a.scales[g * a.out + n] = m.scales[n * a.groups + g];
  return a;
}

// The one group size every linear shares. Throws naming the first linear that does not fit.
int64_t check_linears(const PackedCheckpoint& src) {
  const std::string where = src.dir().string();
  if (src.linears().empty()) throw Error(where, "has no quantized linear; nothing to export as AutoAWQ");
  const PackedLinear& first = src.linears().front();
  for (const PackedLinear& l : src.linears()) {
    const std::string what = "linear " + quote_name(l.name) + " (" + l.quant_type + ", " +
                             std::to_string(l.rows) + " x " + std::to_string(l.cols) + ")";
    const std::string reason = l.is_lut() ? "AutoAWQ stores uniform 4-bit codes, not lookup-table centroids"
                                          : autoawq_unsupported_reason(l.quant, l.rows, l.cols);
    if (!reason.empty()) throw Error(where, what + " cannot be exported as AutoAWQ GEMM: " + reason);
    if (l.quant.group_size != first.quant.group_size)
      throw Error(where, what + " has another group size than linear " + quote_name(first.name) + " (" +
                             first.quant_type + "); AutoAWQ has one group size per model, so quantize " +
                             "with one that divides every linear's input features");
  }
  return first.quant.group_size;
}

// Module names of the dense 2-D weights (embeddings, lm_head, linears left unquantized):
// the engines must not expect AWQ tensors for them. Entries that name no linear layer are
// harmless; both engines only convert linear layers.
json modules_to_not_convert(const PackedCheckpoint& src) {
  std::set<std::string> names;
  for (const TensorView* t : src.dense_tensors())
    if (const auto module = weight_module_name(t->name); t->shape.size() == 2 && module) names.insert(*module);
  for (const PackedLinear& m : src.head_matrices()) names.insert(m.name);  // exported dense
  return names;
}

json awq_config(const PackedCheckpoint& src, int64_t group_size) {
  json config = src.config();
  config.erase("quantization_config");  // fsq's own
  config["torch_dtype"] = "float16";
  config["quantization_config"] = {{"quant_method", "awq"},
                                   {"version", "gemm"},
                                   {"bits", kAutoAwqBits},
                                   {"group_size", group_size},
                                   {"zero_point", true},
                                   {"modules_to_not_convert", modules_to_not_convert(src)}};
  return config;
}

}  // namespace

std::string autoawq_unsupported_reason(const UniformQuant& q, int64_t rows, int64_t cols) {
  if (q.bits != kAutoAwqBits)
    return "AutoAWQ GEMM stores 4-bit codes only, not " + std::to_string(q.bits) + "-bit";
  if (q.symmetric) return "symmetric quantization stores no zero points; AutoAWQ GEMM needs them (zero_point)";
  if (q.group_size != 32 && q.group_size != 64 && q.group_size != 128)
    return q.group_size == 0 ? "per-channel groups are not supported; use a group size of 32, 64 or 128"
                             : "group size " + std::to_string(q.group_size) + " is not 32, 64 or 128";
  if (cols % q.group_size != 0)
    return std::to_string(cols) + " input features are not a multiple of the group size " +
           std::to_string(q.group_size);
  if (rows % kAutoAwqPackFactor != 0)
    return std::to_string(rows) + " output features are not a multiple of 8 (8 codes per int32)";
  return "";
}

void export_autoawq(const PackedCheckpoint& src, const fs::path& out) {
  // Everything that can be refused is refused before the staging folder exists.
  AtomicDir::check_destination(out);
  const std::string where = src.dir().string();
  const int64_t group_size = check_linears(src);
  const json config = awq_config(src, group_size);

  std::vector<AwqLinear> linears;
  linears.reserve(src.linears().size());  // no reallocation: tensors point into them
  std::vector<std::vector<std::byte>> dense;
  dense.reserve(src.dense_tensors().size());
  std::vector<TensorToWrite> tensors;
  for (const TensorView* t : src.dense_tensors()) {
    dense.push_back(export_dense_tensor(*t, DType::F16, where, "an AutoAWQ model"));
    tensors.push_back({t->name, DType::F16, t->shape, dense.back()});
  }
  std::deque<std::vector<std::byte>> head;
  add_dequantized_head(src, DType::F16, where, "an AutoAWQ model", head, tensors);
  for (const PackedLinear& l : src.linears()) {
    const AwqLinear& a = linears.emplace_back(to_awq(l));
    const int64_t words = a.out / kAutoAwqPackFactor;
    tensors.push_back({a.name + ".qweight", DType::I32, {a.in, words}, bytes_of(a.qweight)});
    tensors.push_back({a.name + ".qzeros", DType::I32, {a.groups, words}, bytes_of(a.qzeros)});
    tensors.push_back({a.name + ".scales", DType::F16, {a.groups, a.out}, bytes_of(a.scales)});
  }

  write_export_folder(src, out, tensors, config, "autoawq");
}

}  // namespace fsq
