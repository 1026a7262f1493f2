// One decoder layer run over all calibration windows, a micro-batch at a time, keeping the
// input of every linear group (what AWQ searches on) and the layer output (the next layer's
// input, unless the pipeline propagates the quantized layer's output instead).
#pragma once

#include <ATen/core/Tensor.h>

#include "quantize/pass.h"

namespace fsq {

struct LayerRun {
  LayerActivations acts;  // empty unless collected
  at::Tensor output;      // [N, T, hidden]
};

LayerRun run_fp_layer(const DecoderLayer& layer, const at::Tensor& hidden, const RopeTables& rope,
                      const ModelConfig& cfg, int64_t index, int64_t batch, bool collect_group_inputs);

}  // namespace fsq
