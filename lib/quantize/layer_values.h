// Reading a decoder layer's values as a quantizer needs them: the dense linear behind a
// role (and replacing it), and a tensor's values as host floats.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "runtime/linear.h"
#include "runtime/model.h"

namespace fsq {

// The DenseLinear of `role`; throws fsq::Error naming `who` when the layer holds another kind
// (passes run on fp layers only).
const DenseLinear& dense_linear(const DecoderLayer& layer, const std::string& role, const std::string& who);

// Puts a DenseLinear of (weight, bias) behind `role`, replacing what was there.
void set_dense_linear(DecoderLayer& layer, const std::string& role, at::Tensor weight, std::optional<at::Tensor> bias);

// t's values as contiguous host float32.
std::vector<float> to_floats(const at::Tensor& t);

}  // namespace fsq
