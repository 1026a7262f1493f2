#include "calib/fisher.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <optional>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "runtime/model.h"

namespace fsq {
namespace {

std::vector<std::string> linear_roles(const LlamaModel& model) {
  std::vector<std::string> roles;
  for (const auto& spec : model.arch().linears) roles.push_back(spec.role);
  return roles;
}

// d(loss of sample s)/d(final hidden state) for every sample, on the host: [N, T, hidden].
at::Tensor loss_gradients_at_top(const LlamaModel& model, const at::Tensor& ids, const at::Tensor& top,
                                 double& mean_loss) {
  const c10::Device device = model.options().device;
  at::Tensor grads = at::empty_like(top);
  double loss_sum = 0.0;
  for (int64_t s = 0; s < ids.size(0); ++s) {
    at::Tensor h = top.narrow(0, s, 1).to(device).detach().requires_grad_(true);
    at::Tensor loss = sample_loss(model.head(h)[0], ids[s].to(device));
    loss_sum += loss.item<double>();
    grads.narrow(0, s, 1).copy_(torch::autograd::grad({loss}, {h})[0]);
  }
  mean_loss = loss_sum / static_cast<double>(ids.size(0));
  return grads;
}

}  // namespace

at::Tensor sample_loss(const at::Tensor& logits, const at::Tensor& ids) {
  const int64_t t = logits.size(0);
  return at::cross_entropy_loss(logits.narrow(0, 0, t - 1).to(at::kFloat), ids.narrow(0, 1, t - 1).to(at::kLong));
}

DecoderLayer with_weight_leaves(const DecoderLayer& layer, const std::vector<std::string>& roles,
                                std::vector<std::pair<std::string, at::Tensor>>& leaves) {
  DecoderLayer copy;
  copy.input_norm = layer.input_norm;
  copy.post_attn_norm = layer.post_attn_norm;
  for (const auto& role : roles) {
    const auto* dense = dynamic_cast<const DenseLinear*>(layer.linear(role).get());
    if (dense == nullptr)
      throw Error("Fisher diagonals", "need dense weights; " + role + " is " + layer.linear(role)->describe());
    at::Tensor leaf = dense->weight().detach().to(at::kFloat).requires_grad_(true);
    copy.linear(role) = std::make_unique<DenseLinear>(leaf, dense->bias());
    leaves.emplace_back(role, leaf);
  }
  return copy;
}

FisherResult fisher_diagonals(const LlamaModel& model, const Checkpoint& ckpt, const at::Tensor& ids,
                              const std::vector<at::Tensor>& hidden, const std::function<void(int64_t)>& on_layer) {
  FisherResult result;
  result.layers.resize(static_cast<size_t>(model.config().num_layers));
  result.mean_loss = stream_fisher_diagonals(model, ckpt, ids, hidden, [&](int64_t i, auto&& layer) {
    result.layers[static_cast<size_t>(i)] = std::move(layer);
    if (on_layer) on_layer(i);
  });
  return result;
}

std::vector<int64_t> linear_weight_shape(const ModelConfig& cfg, const std::string& role) {
  const int64_t h = cfg.hidden_size, q = cfg.num_heads * cfg.head_dim, kv = cfg.num_kv_heads * cfg.head_dim;
  const int64_t inter = cfg.intermediate_size;
  if (role == "q_proj") return {q, h};
  if (role == "k_proj" || role == "v_proj") return {kv, h};
  if (role == "o_proj") return {h, q};
  if (role == "gate_proj" || role == "up_proj") return {inter, h};
  if (role == "down_proj") return {h, inter};
  throw Error("Fisher diagonals", "no weight shape for the linear role '" + role + "'");
}

double stream_fisher_diagonals(const LlamaModel& model, const Checkpoint& ckpt, const at::Tensor& ids,
                               const std::vector<at::Tensor>& hidden, const FisherLayerSink& sink) {
  const ModelConfig& cfg = model.config();
  const int64_t layers = cfg.num_layers, n = ids.size(0);
  if (static_cast<int64_t>(hidden.size()) != layers + 1)
    throw Error("Fisher diagonals", "need the input of every layer and the final hidden state",
                std::to_string(layers + 1) + " tensors", std::to_string(hidden.size()));
  const c10::Device device = model.options().device;
  const std::vector<std::string> roles = linear_roles(model);
  at::AutoGradMode grad_on(true);

  double mean_loss = 0;
  at::Tensor out_grads = loss_gradients_at_top(model, ids, hidden.back(), mean_loss);

  for (int64_t i = layers - 1; i >= 0; --i) {
    std::optional<DecoderLayer> loaded;
    if (model.layers().empty()) loaded.emplace(model.load_layer(ckpt, i));
    const DecoderLayer& source = loaded ? *loaded : model.layers()[static_cast<size_t>(i)];
    std::vector<std::pair<std::string, at::Tensor>> leaves;
    DecoderLayer layer = with_weight_leaves(source, roles, leaves);

    std::vector<at::Tensor> sums;
    std::vector<at::Tensor> wrt;
    for (const auto& [role, w] : leaves) {
      sums.push_back(at::zeros_like(w, at::TensorOptions().requires_grad(false)));
      wrt.push_back(w);
    }
    const bool need_input_grad = i > 0;  // layer 0's input is the embedding: nothing below it
    for (int64_t s = 0; s < n; ++s) {
      at::Tensor x = hidden[static_cast<size_t>(i)].narrow(0, s, 1).to(device).detach();
      if (need_input_grad) x.requires_grad_(true);
      at::Tensor y = layer.forward(x, model.rope(x.size(1)), cfg, 0, nullptr, i);
      std::vector<at::Tensor> inputs = wrt;
      if (need_input_grad) inputs.push_back(x);
      auto grads = torch::autograd::grad({y}, inputs, {out_grads.narrow(0, s, 1).to(device, y.scalar_type())});
      at::NoGradGuard no_grad;
      for (size_t j = 0; j < sums.size(); ++j) sums[j].addcmul_(grads[j], grads[j]);
      if (need_input_grad) out_grads.narrow(0, s, 1).copy_(grads.back());
    }
    at::NoGradGuard no_grad;
    std::vector<std::pair<std::string, at::Tensor>> diagonals;
    for (size_t j = 0; j < sums.size(); ++j)
      diagonals.emplace_back(roles[j], sums[j].div_(static_cast<double>(n)).to(at::kCPU));
    sums.clear();
    sink(i, std::move(diagonals));
  }
  return mean_loss;
}

}  // namespace fsq
