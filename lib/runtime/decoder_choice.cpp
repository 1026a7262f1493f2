#include "runtime/decoder_choice.h"

#include <ATen/Context.h>

#include <cstdio>

#include "common/error.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/decode_model.h"
#include "runtime/cuda_decode_spec.h"

namespace fsq {

DeviceRequest parse_device_request(const std::string& name, bool fsq_decoder) {
  DeviceRequest r;
  r.name = name;
  r.cuda_decoder = fsq_decoder && (name == "cuda" || name == "cuda:0") && cuda::compiled();
  if (r.cuda_decoder && cuda::device_count() == 0 && !at::hasCUDA())  // before the model loads
    throw Error("--device " + name, "no GPU is visible; use --device cpu");
  if (r.cuda_decoder || name == "cpu") return r;  // fsq's decoder: the model loads on the CPU
  if (name.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA())
      throw Error("--device " + name, "this fsq build's LibTorch has no CUDA or no GPU is visible; use --device cpu");
    r.load_device = c10::Device(name);
    return r;
  }
  throw Error("--device " + name, "unknown device; use cpu or cuda[:N]");
}

DecoderChoice choose_decoder(const LlamaModel& model, const DeviceRequest& device, int64_t capacity) {
  DecoderChoice choice;
  if (!device.cuda_decoder) return choice;
  auto spec = std::make_shared<CudaDecodeSpec>();
  if (const std::string why = make_cuda_decode_spec(model, capacity, spec.get()); why.empty()) {
    choice.cuda = [spec, option = "--device " + device.name](int64_t batch, int64_t positions) {
      std::unique_ptr<cuda::Decoder> decoder;
      if (const std::string e = cuda::make_device_decoder(spec->spec, batch, positions, cuda::ActType::F16, true, &decoder);
          !e.empty())
        throw Error(option, e);
      return decoder;
    };
  } else if (!at::hasCUDA()) {
    throw Error("--device " + device.name, "fsq's CUDA decoder cannot run this model: " + why);
  } else {
    std::fprintf(stderr, "fsq: note: fsq's CUDA decoder cannot run this model (%s); LibTorch's CUDA runs it\n",
                 why.c_str());
    choice.reload_on = c10::Device(c10::kCUDA, 0);
  }
  return choice;
}

}  // namespace fsq
