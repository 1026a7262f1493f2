// Layer-streaming capture: the calibration batch goes through the model one decoder layer
// at a time (the outputs of layer i are the inputs of layer i+1, kept on the host), so
// peak memory is one layer plus the activations, not the whole model.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "calib/channel_stats.h"

namespace fsq {

class Checkpoint;
class LlamaModel;
struct CalibrationSet;

// The windows of a calibration set as int64 [N, seq_len] on the host.
at::Tensor window_ids(const CalibrationSet& set);

// What one decoder layer saw: the input of each linear group (keyed by ArchSpec group name:
// "attn_in", "attn_out", "mlp_in", "mlp_out") and the layer's output.
struct LayerActivationStats {
  std::map<std::string, ChannelStats> groups;
  ChannelStats output;
};

struct StreamOptions {
  int64_t batch_size = 8;          // windows per forward call
  bool keep_layer_inputs = false;  // keep every layer's input (Fisher needs them)
};

struct StreamResult {
  std::vector<LayerActivationStats> layers;
  // With keep_layer_inputs: num_layers + 1 host tensors [N, T, hidden] in the compute dtype;
  // hidden[i] is the input of layer i, hidden[num_layers] the last layer's output.
  std::vector<at::Tensor> hidden;
};

// ids: int64 [N, T]. Layers come from model.layers() when the model holds them, else are
// loaded from `ckpt` one at a time and dropped after use. `on_layer(i)` runs after layer i.
StreamResult stream_activation_stats(const LlamaModel& model, const Checkpoint& ckpt, const at::Tensor& ids,
                                     const StreamOptions& opts, const std::function<void(int64_t)>& on_layer = {});

}  // namespace fsq
