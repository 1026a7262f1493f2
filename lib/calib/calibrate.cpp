#include "calib/calibrate.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <deque>

#include "calib/calib_file.h"
#include "calib/calib_file_writer.h"
#include "calib/fisher.h"
#include "calib/layer_stream.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/process.h"
#include "common/progress.h"
#include "formats/checkpoint.h"
#include "formats/tokenizer.h"
#include "runtime/eval/speed.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The source's bytes resident at once: all of an in-memory checkpoint (a GGUF import), else
// the mapped tensors outside the decoder layers (embedding, head) and one layer's, since
// load_layer gives a layer's pages back once copied.
int64_t resident_checkpoint_bytes(const Checkpoint& ckpt, const ArchSpec& arch) {
  const std::string stem = arch.layer_prefix.substr(0, arch.layer_prefix.find("{layer}"));
  int64_t whole = 0, layers = 0;
  for (const TensorView* v : ckpt.tensors())
    (v->name.starts_with(stem) ? layers : whole) += static_cast<int64_t>(v->nbytes);
  if (ckpt.shards().empty()) return whole + layers;
  return whole + layers / std::max<int64_t>(1, ckpt.config().num_layers);
}

// The prefix of a layer's tensor names ("model.layers.3"), from the architecture table.
std::string layer_prefix(const ArchSpec& arch, int64_t layer) {
  return layer_name(arch.layer_prefix, layer);
}

// Tensors to write; `floats` owns the statistics' storage until the file is written.
class TensorList {
 public:
  void add(const std::string& name, std::vector<float> values) {
    floats_.push_back(std::move(values));
    const auto& v = floats_.back();
    tensors_.push_back({name, DType::F32, {static_cast<int64_t>(v.size())}, std::as_bytes(std::span(v))});
  }
  void add(const std::string& name, const at::Tensor& t) {
    const at::Tensor& c = held_.emplace_back(t.to(at::kFloat).contiguous());
    tensors_.push_back({name, DType::F32, c.sizes().vec(),
                        {static_cast<const std::byte*>(c.data_ptr()), static_cast<size_t>(c.nbytes())}});
  }
  const std::vector<TensorToWrite>& tensors() const { return tensors_; }

 private:
  std::deque<std::vector<float>> floats_;
  std::deque<at::Tensor> held_;
  std::vector<TensorToWrite> tensors_;
};

nlohmann::json layer_layout(const ArchSpec& arch, int64_t layers) {
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < layers; ++i) {
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& g : arch.groups) {
      nlohmann::json linears = nlohmann::json::array();
      for (const auto& role : g.roles) linears.push_back(layer_name(arch.linear(role).pattern, i));
      groups.push_back({{"name", g.name}, {"linears", linears}});
    }
    out.push_back({{"index", i}, {"prefix", layer_prefix(arch, i)}, {"groups", groups}});
  }
  return out;
}

}  // namespace

CalibrateSummary run_calibration(const CalibrateConfig& config) {
  { AtomicFile probe(config.out); }  // fails now, not after the run, when the output is unwritable

  auto t_load = Clock::now();
  Checkpoint ckpt = Checkpoint::open(config.model);
  const ModelConfig& cfg = ckpt.config();
  if (config.draw.seq_len > cfg.max_position_embeddings)
    throw Error("--seq-len", "exceeds the model's maximum positions",
                "<= " + std::to_string(cfg.max_position_embeddings), std::to_string(config.draw.seq_len));
  auto tokenizer = load_tokenizer(config.model);
  CalibrationText text = read_calibration_text(config.data);
  CalibrationSet set = make_calibration_set(*tokenizer, text, config.draw);
  if (!set.overlap_note.empty()) std::fprintf(stderr, "fsq: note: %s\n", set.overlap_note.c_str());
  auto model = LlamaModel::load(ckpt, config.runtime, /*with_layers=*/false);
  const at::Tensor ids = window_ids(set);

  CalibrateSummary summary;
  summary.out = config.out;
  summary.samples = static_cast<int64_t>(set.windows.size());
  summary.seq_len = set.seq_len;
  summary.tokens = summary.samples * set.seq_len;
  summary.threads = config.threads;
  summary.load_seconds = seconds_since(t_load);
  CalibrationShape shape{summary.samples, set.seq_len, config.batch_size,
                         static_cast<int64_t>(c10::elementSize(config.runtime.compute_dtype)),
                         resident_checkpoint_bytes(ckpt, model->arch()),
                         config.fisher};
  summary.predicted = predict_calibration_memory(cfg, shape);

  auto t_stats = Clock::now();
  StreamResult stream;
  {
    Progress bar("calibrate: statistics", cfg.num_layers);
    stream = stream_activation_stats(*model, ckpt, ids, {config.batch_size, config.fisher},
                                     [&](int64_t i) { bar.update(i + 1, "layer " + std::to_string(i)); });
    bar.finish();
  }
  summary.stats_seconds = seconds_since(t_stats);

  const ArchSpec& arch = model->arch();
  TensorList tensors;
  std::vector<TensorLayout> layout;
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    const LayerActivationStats& layer = stream.layers[static_cast<size_t>(i)];
    for (const auto& g : arch.groups) {
      const ChannelStats& stats = layer.groups.at(g.name);
      for (const auto& role : g.roles) {
        const std::string name = layer_name(arch.linear(role).pattern, i);
        tensors.add(name + kInputAbsmax, stats.absmax());
        tensors.add(name + kInputMean, stats.mean());
        tensors.add(name + kInputSqmean, stats.sqmean());
      }
    }
    tensors.add(layer_prefix(arch, i) + kOutputAbsmax, layer.output.absmax());
    if (config.fisher)
      for (const auto& spec : arch.linears) {
        const std::vector<int64_t> shape = linear_weight_shape(cfg, spec.role);
        layout.push_back({layer_name(spec.pattern, i) + kFisher, DType::F32, shape,
                          static_cast<uint64_t>(shape[0] * shape[1]) * sizeof(float)});
      }
  }
  for (const TensorToWrite& t : tensors.tensors()) layout.push_back({t.name, t.dtype, t.shape, t.data.size()});
  nlohmann::json provenance = {
      {"model", config.model.string()},
      {"model_sha256", ckpt.weights_sha256()},
      {"architecture", cfg.architecture},
      {"data", config.data.string()},
      {"data_sha256", text.sha256},
      {"tokenizer_sha256", tokenizer->sha256()},
      {"samples", summary.samples},
      {"seq_len", set.seq_len},
      {"seed", set.seed},
      {"bos", set.bos},
      {"stream_tokens", set.stream_tokens},
      {"window_starts", set.starts},
      {"tokens", summary.tokens},
      {"fisher", config.fisher},
      {"compute_dtype", scalar_type_name(config.runtime.compute_dtype)},
      {"tool_version", config.tool_version},
      {"layers", layer_layout(arch, cfg.num_layers)},
  };
  // Tensors go to the file as they are made (Fisher diagonals a layer at a time, top first);
  // the mean loss, known last, is filled into the header's reserved room.
  if (config.fisher) provenance["mean_loss"] = 0.0;
  auto t_write = Clock::now();
  CalibrationFileWriter writer(config.out, std::move(layout), provenance);
  for (const TensorToWrite& t : tensors.tensors()) writer.write(t.name, t.data);
  summary.write_seconds = seconds_since(t_write);
  if (config.fisher) {
    auto t_fisher = Clock::now();
    Progress bar("calibrate: Fisher", cfg.num_layers);
    int64_t done = 0;
    summary.mean_loss = stream_fisher_diagonals(
        *model, ckpt, ids, stream.hidden, [&](int64_t i, std::vector<std::pair<std::string, at::Tensor>>&& layer) {
          for (const auto& [role, f] : layer) {
            const at::Tensor c = f.to(at::kFloat).contiguous();
            writer.write(layer_name(arch.linear(role).pattern, i) + kFisher,
                         {static_cast<const std::byte*>(c.data_ptr()), static_cast<size_t>(c.nbytes())});
          }
          bar.update(++done, "layer " + std::to_string(i));
        });
    stream.hidden.clear();
    bar.finish();
    summary.fisher_seconds = seconds_since(t_fisher);
    provenance["mean_loss"] = summary.mean_loss;
  }
  t_write = Clock::now();
  writer.commit(provenance);
  summary.write_seconds += seconds_since(t_write);
  summary.peak_rss_bytes = peak_rss_bytes();
  return summary;
}

nlohmann::json CalibrateSummary::to_json() const {
  auto rate = [&](double s) { return s > 0 ? static_cast<double>(tokens) / s : 0.0; };
  nlohmann::json j = {{"out", out.string()},
                      {"samples", samples},
                      {"seq_len", seq_len},
                      {"tokens", tokens},
                      {"threads", threads},
                      {"load_seconds", load_seconds},
                      {"stats_seconds", stats_seconds},
                      {"stats_tokens_per_second", rate(stats_seconds)},
                      {"fisher_seconds", fisher_seconds},
                      {"write_seconds", write_seconds},
                      {"peak_rss_bytes", peak_rss_bytes},
                      {"predicted_peak_bytes", predicted.total()},
                      {"predicted_memory", predicted.to_json()}};
  if (fisher_seconds > 0) {
    j["fisher_tokens_per_second"] = rate(fisher_seconds);
    j["calibration_tokens_per_second"] = rate(stats_seconds + fisher_seconds);
    j["mean_loss"] = mean_loss;
  }
  return j;
}

std::string CalibrateSummary::to_text() const {
  constexpr double kMiB = 1024.0 * 1024.0;
  char buf[1024];
  const double tps = stats_seconds > 0 ? static_cast<double>(tokens) / stats_seconds : 0.0;
  std::string s;
  std::snprintf(buf, sizeof buf, "wrote %s\n  windows %lld x %lld tokens, threads %d\n  statistics %.2f s (%.0f tok/s)\n",
                out.string().c_str(), static_cast<long long>(samples), static_cast<long long>(seq_len), threads,
                stats_seconds, tps);
  s += buf;
  if (fisher_seconds > 0) {
    std::snprintf(buf, sizeof buf, "  Fisher     %.2f s (%.0f tok/s), mean loss %.4f\n", fisher_seconds,
                  static_cast<double>(tokens) / fisher_seconds, mean_loss);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "  peak RSS   %.1f MiB (predicted %.1f MiB)\n", static_cast<double>(peak_rss_bytes) / kMiB,
                static_cast<double>(predicted.total()) / kMiB);
  return s + buf;
}

}  // namespace fsq
