#include "calib/memory_plan.h"

#include "formats/model_config.h"
#include "runtime/rope_size.h"

namespace fsq {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// fsq with LibTorch, OpenBLAS and OpenMP loaded and idle (measured: ~190 MiB on stories260K).
constexpr int64_t kRuntimeBytes = 256 * kMiB;

int64_t layer_parameters(const ModelConfig& c) {
  const int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  return h * (q + 2 * kv) + q * h + 3 * h * c.intermediate_size + 2 * h;
}

}  // namespace

nlohmann::json CalibrationMemory::to_json() const {
  return {{"runtime", runtime}, {"checkpoint", checkpoint}, {"shell", shell},     {"layer", layer},
          {"activations", activations}, {"work", work}, {"total", total()}};
}

CalibrationMemory predict_calibration_memory(const ModelConfig& c, const CalibrationShape& s) {
  const int64_t e = s.compute_bytes, f32 = 4;
  const int64_t h = c.hidden_size, inter = c.intermediate_size, t = s.seq_len, v = c.vocab_size;
  const int64_t tokens = s.samples * t;
  CalibrationMemory m;
  m.runtime = kRuntimeBytes;
  m.checkpoint = s.checkpoint_bytes;
  m.shell = (c.tie_word_embeddings ? 1 : 2) * v * h * e +
            rope_table_bytes(rope_table_positions(t, 0, c.max_position_embeddings), c.head_dim, e);
  m.layer = layer_parameters(c) * e;
  // Per token of one forward: norms/residuals (~6 h), q/k/v/attention out (~4 h), the MLP
  // (~4 intermediate), fp32 copies for the statistics (~2 intermediate), and the score rows.
  const int64_t per_token = (10 * h + 6 * inter + 2 * c.num_heads * t) * f32;
  if (!s.fisher) {
    m.activations = 2 * tokens * h * e;
    m.work = s.batch_size * t * per_token;
  } else {
    // The loaded layer, its f32 autograd leaves (the same storage when e is f32), the
    // squared-gradient sums and one sample's gradients.
    m.layer = layer_parameters(c) * (e + (e == f32 ? 0 : f32) + 2 * f32);
    m.activations = (c.num_layers + 2) * tokens * h * e;  // every layer input + output gradients
    // One sample: the layer graph kept for backward (~3x a forward), and the head's logits,
    // log-softmax and their gradient.
    m.work = 3 * t * per_token + 3 * t * v * f32;
  }
  return m;
}

}  // namespace fsq
