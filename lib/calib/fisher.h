// Fisher-information diagonals of every decoder linear weight: the mean over calibration
// samples of the squared gradient of that one sample's language-model loss (per-sample
// squared gradients, as SqueezeLLM uses; not the square of a batch gradient).
//
// Memory: activation checkpointing at layer boundaries. The forward pass (layer_stream)
// keeps every layer's input on the host; the backward pass walks the layers from the top,
// loading one layer, recomputing its forward for one sample at a time and backpropagating
// the gradient of that sample's loss w.r.t. the layer output. Only one layer's weights,
// one sample's autograd graph of one layer, the layer inputs and the per-sample output
// gradients ([N, T, hidden]) are alive at once. lib/calib/README.md has the formula.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fsq {

class Checkpoint;
class LlamaModel;
struct ModelConfig;
struct DecoderLayer;

struct FisherResult {
  // Per layer, per linear role (ArchSpec order): fp32 [out, in] on the host.
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> layers;
  double mean_loss = 0.0;  // mean over samples of the per-sample loss
};

// Mean next-token cross-entropy of one sample: logits [T, vocab] at t predict ids[t + 1].
at::Tensor sample_loss(const at::Tensor& logits, const at::Tensor& ids);

// A copy of `layer` whose linear weights are fresh fp32 autograd leaves (biases and norms
// are shared, without gradients). `leaves` receives (role, weight) in ArchSpec order.
// Throws fsq::Error when a linear is not dense.
DecoderLayer with_weight_leaves(const DecoderLayer& layer, const std::vector<std::string>& roles,
                                std::vector<std::pair<std::string, at::Tensor>>& leaves);

// ids: int64 [N, T]; hidden: the layer inputs kept by stream_activation_stats
// (num_layers + 1 tensors [N, T, hidden]). `on_layer(i)` runs after layer i (top first).
FisherResult fisher_diagonals(const LlamaModel& model, const Checkpoint& ckpt, const at::Tensor& ids,
                              const std::vector<at::Tensor>& hidden,
                              const std::function<void(int64_t)>& on_layer = {});

// Receives layer i's diagonals (role, fp32 [out, in] on the host), top layer first, and may
// keep or drop them: the streaming form, where only one layer's are alive at once.
using FisherLayerSink = std::function<void(int64_t layer, std::vector<std::pair<std::string, at::Tensor>>&&)>;
// The same computation handing each layer to `sink`; returns the mean per-sample loss.
double stream_fisher_diagonals(const LlamaModel& model, const Checkpoint& ckpt, const at::Tensor& ids,
                               const std::vector<at::Tensor>& hidden, const FisherLayerSink& sink);

// The [out, in] shape of a decoder linear's weight (role as in ArchSpec: q_proj ... down_proj),
// from the config: what a Fisher diagonal of it holds. Throws fsq::Error for another role.
std::vector<int64_t> linear_weight_shape(const ModelConfig& cfg, const std::string& role);

}  // namespace fsq
