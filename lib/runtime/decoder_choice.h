// What runs a model's steps, chosen once for every command that runs one (fsq eval, fsq
// generate): --device parsed into a request, then, for a model loaded per that request, fsq's
// CUDA decoder (runtime/cuda/decode_model.h), LibTorch's CUDA, or the model's own layers
// (which take the CPU fast decoder, runtime/fast_decode.h, for cached single-token steps where
// they can). The commands include this header, never runtime/cuda/.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace fsq {

namespace cuda {
class Decoder;
}
class LlamaModel;

// --device as parsed.
struct DeviceRequest {
  std::string name = "cpu";                            // as given: cpu, cuda or cuda:N
  c10::Device load_device = c10::Device(c10::kCPU);    // where LibTorch loads the model (RuntimeOptions::device)
  // cuda or cuda:0 with fsq's CUDA backend compiled, for a command that can run it: the model
  // loads on the CPU and choose_decoder tries fsq's CUDA decoder first, whether or not
  // LibTorch has CUDA.
  bool cuda_decoder = false;
};

// "cpu" / "cuda" / "cuda:N". `fsq_decoder`: the command can run fsq's CUDA decoder (see
// DeviceRequest::cuda_decoder). Throws fsq::Error naming --device for an unknown device, or
// for CUDA when LibTorch has none or no GPU is visible (unless fsq's CUDA decoder is tried).
DeviceRequest parse_device_request(const std::string& name, bool fsq_decoder);

// A decoder for `batch` sequences of `capacity` positions; throws fsq::Error when none can be made.
using DecoderFactory = std::function<std::unique_ptr<cuda::Decoder>(int64_t batch, int64_t capacity)>;

struct DecoderChoice {
  // Set when fsq's CUDA decoder runs the model (it keeps what it needs of the model, which
  // must outlive it); a decoder it cannot make throws fsq::Error naming --device.
  DecoderFactory cuda;
  // Set when LibTorch's CUDA runs the model instead (a note on stderr said why): the caller
  // loads the model again on this device.
  std::optional<c10::Device> reload_on;
  // Neither: the model's own layers run it, where it was loaded.
};

// The one choice of fsq eval and fsq generate, for `model` loaded per `device` and decoders of
// up to `capacity` positions. Without device.cuda_decoder: the model's own layers. With it:
// fsq's CUDA decoder where make_cuda_decode_spec takes the model, else LibTorch's CUDA when it
// has one, else fsq::Error naming --device and saying why fsq's decoder cannot run the model.
DecoderChoice choose_decoder(const LlamaModel& model, const DeviceRequest& device, int64_t capacity);

}  // namespace fsq
