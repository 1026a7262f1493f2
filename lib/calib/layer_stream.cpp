#include "calib/layer_stream.h"

#include <ATen/ATen.h>

#include <optional>

#include "calib/dataset.h"
#include "common/error.h"
#include "formats/checkpoint.h"
#include "runtime/model.h"

namespace fsq {
namespace {

// Adds the rows of a [..., C] activation to a per-channel accumulator (on the host, fp32).
void add_activation(ChannelStats& stats, const at::Tensor& x) {
  at::Tensor rows = x.detach().to(at::kCPU, at::kFloat).contiguous();
  const int64_t channels = rows.size(-1);
  if (stats.channels() == 0) stats = ChannelStats(channels);
  stats.add_rows(rows.data_ptr<float>(), rows.numel() / channels);
}

class StatsTap final : public LayerTap {
 public:
  explicit StatsTap(LayerActivationStats& out) : out_(out) {}
  void group_input(const std::string& group, const at::Tensor& x) override { add_activation(out_.groups[group], x); }

 private:
  LayerActivationStats& out_;
};

}  // namespace

at::Tensor window_ids(const CalibrationSet& set) {
  at::Tensor ids = at::empty({static_cast<int64_t>(set.windows.size()), set.seq_len}, at::kLong);
  auto acc = ids.accessor<int64_t, 2>();
  for (size_t s = 0; s < set.windows.size(); ++s)
    for (int64_t t = 0; t < set.seq_len; ++t) acc[static_cast<int64_t>(s)][t] = set.windows[s][static_cast<size_t>(t)];
  return ids;
}

StreamResult stream_activation_stats(const LlamaModel& model, const Checkpoint& ckpt, const at::Tensor& ids,
                                     const StreamOptions& opts, const std::function<void(int64_t)>& on_layer) {
  if (ids.dim() != 2) throw Error("calibration", "token ids must be [samples, tokens]");
  if (opts.batch_size < 1) throw Error("--batch-size", "must be at least 1");
  at::NoGradGuard no_grad;
  const ModelConfig& cfg = model.config();
  const c10::Device device = model.options().device;
  const int64_t n = ids.size(0), t = ids.size(1);

  auto for_each_batch = [&](const std::function<void(int64_t, int64_t)>& fn) {
    for (int64_t b = 0; b < n; b += opts.batch_size) fn(b, std::min(opts.batch_size, n - b));
  };

  at::Tensor hidden = at::empty({n, t, cfg.hidden_size}, at::TensorOptions().dtype(model.options().compute_dtype));
  for_each_batch([&](int64_t b, int64_t nb) { hidden.narrow(0, b, nb).copy_(model.embed(ids.narrow(0, b, nb))); });

  StreamResult result;
  result.layers.resize(static_cast<size_t>(cfg.num_layers));
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    std::optional<DecoderLayer> loaded;
    if (model.layers().empty()) loaded.emplace(model.load_layer(ckpt, i));
    const DecoderLayer& layer = loaded ? *loaded : model.layers()[static_cast<size_t>(i)];

    LayerActivationStats& stats = result.layers[static_cast<size_t>(i)];
    StatsTap tap(stats);
    at::Tensor next = at::empty_like(hidden);
    for_each_batch([&](int64_t b, int64_t nb) {
      at::Tensor y = layer.forward(hidden.narrow(0, b, nb).to(device), model.rope(hidden.size(1)), cfg, 0, nullptr, i, &tap);
      add_activation(stats.output, y);
      next.narrow(0, b, nb).copy_(y);
    });
    if (opts.keep_layer_inputs) result.hidden.push_back(hidden);
    hidden = next;
    if (on_layer) on_layer(i);
  }
  if (opts.keep_layer_inputs) result.hidden.push_back(hidden);
  return result;
}

}  // namespace fsq
