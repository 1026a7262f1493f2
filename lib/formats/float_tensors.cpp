#include "formats/float_tensors.h"

#include <cmath>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/half.h"
#include "formats/tensor_inventory.h"

namespace fsq {
namespace {

// The file that holds `v`: its shard, or the checkpoint itself (in memory: a GGUF import).
std::string file_holding(const Checkpoint& ckpt, const TensorView& v) {
  for (const auto& shard : ckpt.shards())
    if (shard->find(v.name) == &v) return shard->path().string();
  return ckpt.dir().string();
}

// The checkpoint's tensors that the model reads as numbers, in name order.
std::vector<const TensorView*> float_tensors_read(const Checkpoint& ckpt) {
  const ModelConfig& cfg = ckpt.config();
  std::vector<const TensorView*> out;
  for (const std::string& name : expected_tensor_names(arch_spec_for(cfg.architecture), cfg))
    if (const TensorView* v = ckpt.find(name)) out.push_back(v);
  return out;
}

template <class T>
T stored_value(const std::byte* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

double float_value_at(const TensorView& v, size_t i) {
  switch (v.dtype) {
    case DType::F32: return stored_value<float>(v.data + 4 * i);
    case DType::F64: return stored_value<double>(v.data + 8 * i);
    case DType::F16: return f16_to_f32(stored_value<uint16_t>(v.data + 2 * i));
    case DType::BF16: return bf16_to_f32(stored_value<uint16_t>(v.data + 2 * i));
    default: return 0.0;  // not a float: check_float_dtypes refuses it first
  }
}

}  // namespace

bool is_float_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

void check_float_dtypes(const Checkpoint& ckpt) {
  for (const TensorView* v : float_tensors_read(ckpt))
    if (!is_float_dtype(v->dtype))
      throw Error(file_holding(ckpt, *v), "tensor " + quote_name(v->name) + " is stored as " + std::string(dtype_name(v->dtype)) +
                                         ", but the model reads it as floats (F32, F16 or BF16); the file is corrupt "
                                         "or was written wrong");
}

void check_finite_floats(const Checkpoint& ckpt) {
  check_float_dtypes(ckpt);
  for (const TensorView* v : float_tensors_read(ckpt)) {
    const size_t n = static_cast<size_t>(v->numel());
    for (size_t i = 0; i < n; ++i) {
      const double x = float_value_at(*v, i);
      if (std::isfinite(x)) continue;
      throw Error(file_holding(ckpt, *v), "tensor " + quote_name(v->name) + " holds a non-finite value (" + std::to_string(x) +
                                         " at flat index " + std::to_string(i) +
                                         "); fix the checkpoint (fsq eval refuses it too, unless --allow-nonfinite)");
    }
  }
}

}  // namespace fsq
