// Built instead of the .cu sources when the CUDA backend is off: every entry point reports
// that there is no device, so callers and tests take their CPU paths.
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/decode_model.h"
#include "runtime/cuda/decode_ops.h"
#include "runtime/cuda/dense_gemv.h"
#include "runtime/cuda/quant_gemv.h"

namespace fsq::cuda {

namespace {
const char* kNotCompiled = "fsq was built without the CUDA backend (FSQ_CUDA=OFF or no nvcc)";

bool not_compiled(std::string* why) {
  if (why) *why = kNotCompiled;
  return false;
}
}  // namespace

bool compiled() { return false; }
int device_count() { return 0; }
std::string describe() { return kNotCompiled; }
std::string rms_norm_f32(const float*, const float*, float*, int, int, float) { return kNotCompiled; }
std::string copy_to_device(void**, const void*, size_t) { return kNotCompiled; }
std::string copy_to_host(void*, const void*, size_t) { return kNotCompiled; }
void free_device(void*) {}

const char* act_type_name(ActType act) { return act == ActType::F16 ? "f16" : "bf16"; }
bool uniform_gemv_can_implement(const cpu::UniformWeightsView&, int64_t, std::string* why) { return not_compiled(why); }
bool lut_gemv_can_implement(const cpu::LutWeightsView&, int64_t, std::string* why) { return not_compiled(why); }
std::string uniform_gemv(const cpu::UniformWeightsView&, const void*, int64_t, int64_t, void*, int64_t, ActType,
                         void*) {
  return kNotCompiled;
}
std::string lut_gemv(const cpu::LutWeightsView&, const void*, int64_t, int64_t, void*, int64_t, ActType, void*) {
  return kNotCompiled;
}
std::string synchronize() { return kNotCompiled; }

std::string embed_uniform_rows(const cpu::UniformWeightsView&, const int32_t*, int64_t, float*, void*) {
  return kNotCompiled;
}
std::string embed_half_rows(const uint16_t*, int64_t, int64_t, const int32_t*, int64_t, float*, void*) {
  return kNotCompiled;
}
std::string dense_gemv_f16(const HalfWeightsView&, const void*, int64_t, int64_t, void*, int64_t, ActType, void*) {
  return kNotCompiled;
}
std::string rms_norm_to_act(const float*, const float*, int64_t, int64_t, float, void*, ActType, void*) {
  return kNotCompiled;
}
std::string add_act(float*, const void*, int64_t, ActType, void*) { return kNotCompiled; }
std::string silu_mul_act(const void*, const void*, int64_t, int64_t, int64_t, void*, ActType, void*) {
  return kNotCompiled;
}
std::string rope_append(const AttentionShape&, const void*, const void*, const void*, int64_t, ActType, const float*,
                        const float*, const int32_t*, float*, float*, float*, void*) {
  return kNotCompiled;
}
std::string decode_attention(const AttentionShape&, const float*, const float*, const float*, const int32_t*, float,
                             void*, ActType, void*) {
  return kNotCompiled;
}

std::string make_device_decoder(const DecodeModelSpec&, int64_t, int64_t, ActType, bool, std::unique_ptr<Decoder>*) {
  return kNotCompiled;
}

}  // namespace fsq::cuda
