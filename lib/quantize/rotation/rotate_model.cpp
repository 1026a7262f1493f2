#include "quantize/rotation/rotate_model.h"

#include <cstring>
#include <map>
#include <vector>

#include "common/error.h"
#include "formats/architectures.h"
#include "formats/tensor_convert.h"
#include "formats/tensor_inventory.h"

namespace fsq {
namespace rotate_model_detail {

struct RotValues {
  std::vector<int64_t> shape;
  std::vector<double> v;
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? (shape.empty() ? 1 : shape[0]) : shape[1]; }
};

RotValues read_values_f64(const Checkpoint& ck, const std::string& name) {
  const TensorView& t = ck.get(name);
  const std::vector<std::byte> f32 = convert_float_tensor(t, DType::F32);
  std::vector<float> f(static_cast<size_t>(t.numel()));
  std::memcpy(f.data(), f32.data(), f.size() * sizeof(float));
  return {t.shape, std::vector<double>(f.begin(), f.end())};
}

// W[:, k] *= g[k] for W [rows, d].
void fold_norm_gain(RotValues& w, const RotValues& g, const std::string& where) {
  const int64_t d = w.cols();
  if (static_cast<int64_t>(g.v.size()) != d) throw Error(where, "norm size differs from the linear's input size");
  for (int64_t r = 0; r < w.rows(); ++r)
    for (int64_t k = 0; k < d; ++k) w.v[static_cast<size_t>(r * d + k)] *= g.v[static_cast<size_t>(k)];
}

class RotatedTensors {
 public:
  void put(const std::string& name, const RotValues& x) {
    std::vector<float> f(x.v.size());
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(x.v[i]);  // one rounding
    names_.push_back(name);
    shapes_.push_back(x.shape);
    out_.buffers.push_back(std::move(f));
  }
  void put_ones(const std::string& name, int64_t n) { put(name, RotValues{{n}, std::vector<double>(n, 1.0)}); }
  OwnedTensors take() {
    for (size_t i = 0; i < names_.size(); ++i) {
      const std::vector<float>& b = out_.buffers[i];
      out_.views.push_back(TensorView{names_[i], DType::F32, shapes_[i], reinterpret_cast<const std::byte*>(b.data()),
                                      b.size() * sizeof(float)});
    }
    return std::move(out_);
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<int64_t>> shapes_;
  OwnedTensors out_;
};

}  // namespace rotate_model_detail

using namespace rotate_model_detail;

std::string describe_rotation(const Checkpoint& src, const RotateOptions& opts) {
  return Orthogonal::make(src.config().hidden_size, opts.kind, opts.seed, src.dir().string()).describe();
}

Checkpoint rotate_checkpoint(const Checkpoint& src, const RotateOptions& opts) {
  const ModelConfig& cfg = src.config();
  const ArchSpec& arch = arch_spec_for(cfg.architecture);
  check_no_unused_tensors(src);
  const int64_t d = cfg.hidden_size;
  const std::string where = src.dir().string();
  const Orthogonal q = Orthogonal::make(d, opts.kind, opts.seed, where + ": hidden_size");
  RotatedTensors out;

  RotValues embed = read_values_f64(src, arch.embed.hf);
  if (embed.cols() != d) throw Error(where, "embedding width differs from hidden_size");
  // The head reads the final norm's output: fold, then rotate. Tied: the embedding as read.
  RotValues head = cfg.tie_word_embeddings ? embed : read_values_f64(src, arch.lm_head.hf);
  fold_norm_gain(head, read_values_f64(src, arch.final_norm.hf), arch.lm_head.hf);
  q.rotate_rows(head.v.data(), head.rows());
  out.put(arch.lm_head.hf, head);
  head = {};
  q.rotate_rows(embed.v.data(), embed.rows());
  out.put(arch.embed.hf, embed);
  embed = {};
  out.put_ones(arch.final_norm.hf, d);

  for (int64_t layer = 0; layer < cfg.num_layers; ++layer) {
    for (const LinearGroup& group : arch.groups) {
      const std::string norm = group.norm.empty() ? "" : layer_name(group.norm, layer);
      const RotValues gain = norm.empty() ? RotValues{} : read_values_f64(src, norm);
      for (const std::string& role : group.roles) {
        const std::string base = layer_name(arch.linear(role).pattern, layer);
        RotValues w = read_values_f64(src, base + ".weight");
        const bool has_bias = src.find(base + ".bias") != nullptr;
        RotValues bias = has_bias ? read_values_f64(src, base + ".bias") : RotValues{};
        if (!norm.empty()) {  // reads the residual: W -> diag-folded W Q; its bias is per output row
          fold_norm_gain(w, gain, base);
          q.rotate_rows(w.v.data(), w.rows());
        } else {  // writes into the residual: W -> Q^T W, b -> b Q
          if (w.rows() != d) throw Error(base, "output size differs from hidden_size");
          q.rotate_columns(w.v.data(), w.cols());
          if (has_bias) q.rotate_rows(bias.v.data(), 1);
        }
        out.put(base + ".weight", w);
        if (has_bias) out.put(base + ".bias", bias);
      }
      if (!norm.empty()) out.put_ones(norm, d);
    }
  }
  ModelConfig rotated = cfg;
  rotated.tie_word_embeddings = false;
  rotated.torch_dtype = "float32";
  return Checkpoint::from_memory(src.dir(), std::move(rotated), out.take(), src.weights_sha256());
}

}  // namespace fsq
