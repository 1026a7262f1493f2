// Built instead of the .cu sources when the CUDA backend is off: every entry point reports
// that there is no device, so callers and tests take their CPU paths.
#include "runtime/cuda/cuda_backend.h"

namespace fsq::cuda {

namespace {
const char* kNotCompiled = "fsq was built without the CUDA backend (FSQ_CUDA=OFF or no nvcc)";
}

bool compiled() { return false; }
int device_count() { return 0; }
std::string describe() { return kNotCompiled; }
std::string rms_norm_f32(const float*, const float*, float*, int, int, float) { return kNotCompiled; }
std::string copy_to_device(void**, const void*, size_t) { return kNotCompiled; }
std::string copy_to_host(void*, const void*, size_t) { return kNotCompiled; }
void free_device(void*) {}

}  // namespace fsq::cuda
