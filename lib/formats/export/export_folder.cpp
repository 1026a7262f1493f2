#include "formats/export/export_folder.h"

#include <cmath>
#include <cstring>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/half.h"
#include "formats/tensor_convert.h"

namespace fsq {

std::vector<std::byte> export_dense_tensor(const TensorView& t, DType dtype, const std::string& where,
                                           const std::string& format) {
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw Error(where, "tensor " + quote_name(t.name) + " is " + std::string(dtype_name(t.dtype)) +
                           "; only float tensors can go into " + format);
  if (dtype != DType::F16 && dtype != DType::F32)
    throw Error(where, "dense tensors are exported as F16 or F32, not " + std::string(dtype_name(dtype)));
  std::vector<std::byte> bytes = convert_float_tensor(t, dtype);
  const size_t width = dtype_size(dtype);
  const std::string dtype_word = dtype == DType::F16 ? "fp16" : "fp32";
  for (size_t i = 0; i < bytes.size() / width; ++i) {
    float v;
    if (dtype == DType::F16) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, sizeof h);
      v = f16_to_f32(h);
    } else {
      std::memcpy(&v, bytes.data() + 4 * i, sizeof v);
    }
    if (!std::isfinite(v))
      throw Error(where, "tensor " + quote_name(t.name) + ": element " + std::to_string(i) + " is not finite in " + dtype_word +
                             (dtype == DType::F16 ? " (|x| > 65504, inf or nan): " : " (inf or nan): ") + format +
                             " stores dense tensors as " + dtype_word);
  }
  return bytes;
}

void add_dequantized_head(const PackedCheckpoint& src, DType dtype, const std::string& where,
                          const std::string& format, std::deque<std::vector<std::byte>>& storage,
                          std::vector<TensorToWrite>& tensors) {
  for (const PackedLinear& m : src.head_matrices()) {
    const std::vector<float> values = dequantize_linear(m);
    const TensorView view{m.name + ".weight", DType::F32, {m.rows, m.cols},
                          reinterpret_cast<const std::byte*>(values.data()), values.size() * sizeof(float)};
    storage.push_back(export_dense_tensor(view, dtype, where, format));
    tensors.push_back({view.name, dtype, view.shape, storage.back()});
  }
}

void write_export_folder(const PackedCheckpoint& src, const std::filesystem::path& out,
                         const std::vector<TensorToWrite>& tensors, const nlohmann::json& config,
                         const std::string& export_name) {
  AtomicDir dir(out);  // removes its staging folder on any failure
  const std::map<std::string, std::string> meta = {{"format", "pt"},
                                                   {"fsq_export", export_name},
                                                   {"fsq_source_sha256", src.manifest().value("source_sha256", "")}};
  write_safetensors(dir.staging() / kPackedWeightsFile, tensors, meta);
  write_file_atomic(dir.staging() / kPackedConfigFile, config.dump(2) + "\n");
  std::error_code ec;
  for (const std::string& name : packed_copied_source_files())
    if (std::filesystem::is_regular_file(src.dir() / name, ec))
      copy_file_atomic(src.dir() / name, dir.staging() / name);
  dir.commit();
}

}  // namespace fsq
