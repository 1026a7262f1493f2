// A loaded model as the CUDA decoders' spec (runtime/cuda/decode_model.h): the packed views
// of its linears, embedding and head, its norms and rotary tables, all pointing into the
// model (which must outlive the spec) or into this struct.
#pragma once

#include <string>
#include <vector>

#include "runtime/cuda/decode_model.h"

namespace fsq {

class LlamaModel;

struct CudaDecodeSpec {
  cuda::DecodeModelSpec spec;
  std::vector<float> rope_cos, rope_sin;  // [positions, head_dim], what spec.rope_* point at
  std::vector<std::vector<uint16_t>> half_weights;  // dense f32 matrices rounded to fp16
};

// Fills *out for `positions` cached positions, or says why this model cannot run on the CUDA
// decoders: every decoder linear must be a packed uniform or LUT (squeezellm) matrix or a
// dense f32 one (rounded to fp16 here, so its values must lie within fp16's range), the
// embedding and the head packed uniform or dense, none with a bias (a source model or an
// `fsq quantize` rtn, awq or squeezellm checkpoint of a LLaMA-family model), in f32 compute,
// and the shapes within the kernels' limits (cuda::decode_spec_problem at batch 1).
std::string make_cuda_decode_spec(const LlamaModel& model, int64_t positions, CudaDecodeSpec* out);

}  // namespace fsq
