#include "runtime/model.h"

#include <ATen/ATen.h>

#include <cmath>

#include "common/error.h"
#include "common/mapped_file.h"
#include "formats/float_tensors.h"
#include "formats/packed_checkpoint.h"
#include "formats/tensor_inventory.h"
#include "runtime/fast_decode.h"
#include "runtime/int8_linear.h"
#include "runtime/intonly_model.h"
#include "runtime/lut_linear.h"
#include "runtime/quant_linear.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

class Loader {
 public:
  // matrices_as_stored: bf16/f16 matrices (linears, embedding, head) stay views of the
  // mapped file (matrix()); everything else is converted to the weight dtype.
  Loader(const Checkpoint& ckpt, const RuntimeOptions& opts, const PackedCheckpoint* packed, bool matrices_as_stored)
      : ckpt_(ckpt), opts_(opts), packed_(packed), matrices_as_stored_(matrices_as_stored) {}

  at::Tensor get(const std::string& name, std::vector<int64_t> shape) { return tensor(name, shape, false); }

  // A weight matrix: as get(), or, for a 16-bit tensor when matrices are kept as stored, a
  // zero-copy view of the mapped file that keeps its shard open (the kernels widen it).
  at::Tensor matrix(const std::string& name, std::vector<int64_t> shape) {
    return tensor(name, shape, matrices_as_stored_);
  }

  std::unique_ptr<Linear> linear(const LinearSpec& spec, int64_t layer, int64_t out, int64_t in, bool attention_bias) {
    const std::string base = layer_name(spec.pattern, layer);
    if (const PackedLinear* p = packed_ ? packed_->find_linear(base) : nullptr) {
      if (p->rows != out || p->cols != in)
        throw Error(packed_->dir().string(), "packed linear " + quote_name(base) + " has shape " + show({p->rows, p->cols}) +
                                                 ", config.json implies " + show({out, in}));
      count_ += out * in;
      if (p->is_w8a8()) return make_int8_linear(*p);
      if (p->is_lut()) {
        std::unique_ptr<LutLinear> l = make_lut_linear(*p);
        l->set_int8_decode(opts_.fast_decode && opts_.int8_decode_activations);
        l->set_int8_prefill(opts_.int8_prefill_activations);
        return l;
      }
      return quant_linear(*p);
    }
    at::Tensor w = matrix(base + ".weight", {out, in});
    std::optional<at::Tensor> b;
    if (spec.bias == BiasRule::kAlways || (attention_bias && spec.bias == BiasRule::kIfAttentionBias))
      b = get(base + ".bias", {out});
    return std::make_unique<DenseLinear>(std::move(w), std::move(b));
  }

  // The embedding or head `weight_name` [rows, cols] when the packed checkpoint holds it
  // quantized (--head-bits), else null.
  std::unique_ptr<QuantLinear> head_matrix(const std::string& weight_name, int64_t rows, int64_t cols) {
    const std::string base = weight_module_name(weight_name).value_or(weight_name);
    const PackedLinear* p = packed_ ? packed_->find_head_matrix(base) : nullptr;
    if (p == nullptr) return nullptr;
    if (p->rows != rows || p->cols != cols)
      throw Error(packed_->dir().string(), "packed " + quote_name(base) + " has shape " + show({p->rows, p->cols}) +
                                               ", config.json implies " + show({rows, cols}));
    count_ += rows * cols;
    return quant_linear(*p);
  }

  std::unique_ptr<QuantLinear> quant_linear(const PackedLinear& p) const {
    std::unique_ptr<QuantLinear> q = make_quant_linear(p);
    q->set_int8_decode(opts_.fast_decode && opts_.int8_decode_activations);
    q->set_int8_prefill(opts_.int8_prefill_activations);
    return q;
  }

  int64_t count() const { return count_; }

  // Gives back the resident pages of every mapped tensor read so far that was copied (a
  // layer-streaming caller is done with them; zero-copy matrices keep theirs).
  void release_copied_pages() {
    for (const TensorView* v : copied_)
      if (is_shard(ckpt_.owner_of(*v))) drop_mapped_pages(v->data, v->nbytes);
    copied_.clear();
  }

  // Tensor `name` of `shape`: a 16-bit one mapped as stored when `as_stored`, else copied
  // into the weight dtype (and its file pages noted for release_copied_pages).
  at::Tensor tensor(const std::string& name, const std::vector<int64_t>& shape, bool as_stored) {
    const TensorView& v = ckpt_.get(name);
    if (v.shape != shape) throw Error(ckpt_.dir().string(), "tensor '" + name + "' has shape " + show(v.shape) +
                                                                ", config.json implies " + show(shape));
    count_ += v.numel();
    at::Tensor t;
    if (as_stored && (v.dtype == DType::BF16 || v.dtype == DType::F16)) {
      t = mapped_tensor(v, ckpt_.owner_of(v));
    } else {
      t = tensor_from_view(v, opts_.weight_dtype.value_or(opts_.compute_dtype), opts_.device);
      copied_.push_back(&v);
    }
    if (!opts_.allow_nonfinite_weights) check_finite_weight(t, name);
    return t;
  }

  void check_finite_weight(const at::Tensor& t, const std::string& name) const {
    // In slices: isfinite makes float and bool temporaries of its input's size, which for a
    // whole embedding (500 MB in f32 at 7B) was the largest allocation of a quantize run.
    constexpr int64_t kSliceElements = int64_t{1} << 22;
    const at::Tensor flat = t.reshape({-1});
    for (int64_t begin = 0; begin < flat.numel(); begin += kSliceElements) {
      const at::Tensor slice = flat.slice(0, begin, std::min(flat.numel(), begin + kSliceElements));
      if (!at::isfinite(slice).all().item<bool>()) return report_nonfinite(slice, begin, name);
    }
  }

  [[noreturn]] void report_nonfinite(const at::Tensor& slice, int64_t offset, const std::string& name) const {
    const int64_t first = offset + at::logical_not(at::isfinite(slice)).nonzero()[0][0].item<int64_t>();
    const double value = slice[first - offset].item<double>();
    throw Error(ckpt_.dir().string(), "tensor '" + name + "' holds a non-finite value (" + std::to_string(value) +
                                          " at flat index " + std::to_string(first) +
                                          "); fix the checkpoint, or pass --allow-nonfinite to eval to run it anyway");
  }

  static std::string show(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }

 private:
  const Checkpoint& ckpt_;
  const RuntimeOptions& opts_;
  const PackedCheckpoint* packed_;
  bool is_shard(const std::shared_ptr<const void>& owner) const {
    for (const auto& shard : ckpt_.shards())
      if (owner.get() == shard.get()) return true;
    return false;  // in-memory tensors (a GGUF import): never madvise those
  }

  bool matrices_as_stored_ = false;
  int64_t count_ = 0;
  std::vector<const TensorView*> copied_;
};

DecoderLayer load_decoder_layer(Loader& load, const ModelConfig& c, const ArchSpec& a, int64_t i) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  const int64_t q_out = c.num_heads * D, kv_out = c.num_kv_heads * D;
  const bool ab = c.attention_bias;
  DecoderLayer L;
  L.input_norm = load.get(layer_name(a.input_norm.hf, i), {H});
  L.post_attn_norm = load.get(layer_name(a.post_attn_norm.hf, i), {H});
  L.q = load.linear(a.linear("q_proj"), i, q_out, H, ab);
  L.k = load.linear(a.linear("k_proj"), i, kv_out, H, ab);
  L.v = load.linear(a.linear("v_proj"), i, kv_out, H, ab);
  L.o = load.linear(a.linear("o_proj"), i, H, q_out, ab);
  L.gate = load.linear(a.linear("gate_proj"), i, I, H, ab);
  L.up = load.linear(a.linear("up_proj"), i, I, H, ab);
  L.down = load.linear(a.linear("down_proj"), i, H, I, ab);
  return L;
}

}  // namespace

std::unique_ptr<LlamaModel> LlamaModel::load(const Checkpoint& ckpt, const RuntimeOptions& opts, bool with_layers,
                                             const PackedCheckpoint* packed) {
  auto m = std::unique_ptr<LlamaModel>(new LlamaModel());
  m->cfg_ = ckpt.config();
  m->arch_ = &arch_spec_for(m->cfg_.architecture);
  m->opts_ = opts;
  m->packed_ = packed;
  const ModelConfig& c = m->cfg_;
  const ArchSpec& a = *m->arch_;
  check_no_unused_tensors(ckpt, packed ? packed->linear_tensor_names() : std::set<std::string>{});
  check_float_dtypes(ckpt);  // an I32 norm would be converted into nonsense floats
  // A whole model run in f32 on the CPU reads bf16/f16 sources as stored: a 7B bf16 checkpoint
  // runs in its own 13.5 GB of (reclaimable, file-backed) pages instead of a 27 GB f32 copy.
  // Layer-streaming callers (calibrate, quantize) get f32 copies of one layer at a time,
  // which they may modify.
  const bool as_stored = with_layers && !opts.weight_dtype && opts.compute_dtype == at::kFloat && opts.device.is_cpu();
  Loader load(ckpt, opts, packed, as_stored);

  const int64_t H = c.hidden_size;
  m->packed_embed_ = load.head_matrix(a.embed.hf, c.vocab_size, H);
  if (!m->packed_embed_) m->embed_ = load.matrix(a.embed.hf, {c.vocab_size, H});
  m->final_norm_ = load.get(a.final_norm.hf, {H});
  if (c.tie_word_embeddings) {
    if (m->packed_embed_)
      m->lm_head_ = m->packed_embed_;
    else
      m->lm_head_ = std::make_shared<DenseLinear>(m->embed_, std::nullopt);
  } else if (std::shared_ptr<const Linear> head = load.head_matrix(a.lm_head.hf, c.vocab_size, H)) {
    m->lm_head_ = std::move(head);
  } else {
    m->lm_head_ = std::make_shared<DenseLinear>(load.matrix(a.lm_head.hf, {c.vocab_size, H}), std::nullopt);
  }
  // Every weight is copied out of the mapped files (converted, packed, aligned): dropping the
  // mapped pages as the copies are made keeps the files from counting twice in the peak RSS
  // (SmolLM2 f32: the 540 MB file and its copy).
  const auto drop_file_pages = [&] {
    for (const auto& shard : ckpt.shards()) shard->drop_resident_pages();
    if (packed) packed->weights().drop_resident_pages();
  };
  drop_file_pages();
  if (with_layers) {
    m->layers_.reserve(static_cast<size_t>(c.num_layers));
    for (int64_t i = 0; i < c.num_layers; ++i) {
      m->layers_.push_back(load_decoder_layer(load, c, a, i));
      drop_file_pages();
    }
  }
  m->parameter_count_ = load.count();
  m->rope_ = std::make_unique<RotaryCache>(c, opts.compute_dtype, opts.device);
  if (with_layers && packed && packed->has_intonly_ranges() && opts.integer_only) {
    if (!opts.device.is_cpu())
      throw Error(packed->dir().string(), "the integer-only path runs on the CPU; this run asks for " +
                                              opts.device.str());
    m->intonly_ = std::make_shared<const IntonlyStack>(m->layers_, c, a, *packed,
                                                       opts.intonly_token_inputs ? IntonlyInputs::Token
                                                                                 : IntonlyInputs::Static);
  }
  if (with_layers) {
    const FastDecodeModel parts{&m->cfg_, &m->embed_, m->packed_embed_.get(), &m->final_norm_, m->lm_head_.get(),
                                &m->layers_};
    if (!opts.fast_decode)
      m->fast_unavailable_ = "turned off (RuntimeOptions::fast_decode)";
    else if (opts.compute_dtype != at::kFloat)
      m->fast_unavailable_ = "the compute dtype is not f32";
    else
      m->fast_unavailable_ = FastDecoder::unsupported_reason(parts);
    if (m->fast_unavailable_.empty()) m->fast_ = std::make_unique<FastDecoder>(parts);
  }
  return m;
}

LlamaModel::~LlamaModel() = default;

namespace {

// How many of the model's linears (decoder layers and head) run an int8 path, out of all:
// the kernel-backed ones (uniform and LUT, squeezellm) whose `on` says so.
template <typename Layers>
std::pair<int64_t, int64_t> count_int8_linears(const Layers& layers, const Linear* head,
                                               bool (PackedKernelLinear::*on)() const) {
  std::pair<int64_t, int64_t> counts{0, 0};
  const auto count = [&](const Linear* lin) {
    const auto* p = dynamic_cast<const PackedKernelLinear*>(lin);
    counts.first += p != nullptr && (p->*on)() ? 1 : 0;
    ++counts.second;
  };
  for (const auto& L : layers)
    for (const Linear* lin : {L.q.get(), L.k.get(), L.v.get(), L.o.get(), L.gate.get(), L.up.get(), L.down.get()})
      count(lin);
  count(head);
  return counts;
}

}  // namespace

std::pair<int64_t, int64_t> LlamaModel::int8_prefill_linears() const {
  return count_int8_linears(layers_, lm_head_.get(), &PackedKernelLinear::int8_prefill);
}

std::pair<int64_t, int64_t> LlamaModel::int8_decode_linears() const {
  return count_int8_linears(layers_, lm_head_.get(), &PackedKernelLinear::int8_decode);
}

DecoderLayer LlamaModel::load_layer(const Checkpoint& ckpt, int64_t index) const {
  if (index < 0 || index >= cfg_.num_layers)
    throw Error(ckpt.dir().string(), "no decoder layer " + std::to_string(index) + " (the model has " +
                                         std::to_string(cfg_.num_layers) + ")");
  Loader load(ckpt, opts_, packed_, /*matrices_as_stored=*/false);
  DecoderLayer layer = load_decoder_layer(load, cfg_, *arch_, index);
  // The source is read, never held: a streamed layer's file pages leave this process's RSS
  // once copied (quantize of a 7B bf16 model kept all 12.6 GiB of them resident).
  load.release_copied_pages();
  return layer;
}

at::Tensor LlamaModel::embed(const at::Tensor& ids) const {
  if (!packed_embed_) return at::embedding(embed_, ids.to(embed_.device())).to(opts_.compute_dtype);
  const at::Tensor flat = ids.to(at::kCPU).to(at::kLong).contiguous().view({-1});
  const int64_t n = flat.numel(), H = cfg_.hidden_size, vocab = cfg_.vocab_size;
  at::Tensor out = at::empty({n, H}, at::TensorOptions().dtype(at::kFloat));
  const int64_t* id = flat.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    check_token_id(id[i], vocab);
    packed_embed_->dequantize_row(id[i], out.data_ptr<float>() + i * H);
  }
  std::vector<int64_t> shape = ids.sizes().vec();
  shape.push_back(H);
  return out.view(shape).to(opts_.device).to(opts_.compute_dtype);
}

namespace {

// "w4g128a [576 x 576] awq" -> "w4g128a awq": the kind of kernel, not the linear.
std::string without_shape(const std::string& description) {
  const size_t open = description.find(" [");
  const size_t close = description.find(']', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return description;
  return description.substr(0, open) + description.substr(close + 1);
}

}  // namespace

std::map<std::string, int64_t> LlamaModel::matmul_kinds() const {
  std::map<std::string, int64_t> kinds;
  for (const DecoderLayer& layer : layers_)
    for (const auto& spec : arch_->linears) {
      std::string kind = without_shape(layer.linear(spec.role)->describe());
      // LUT linears name their nonzero count ("lut4 squeezellm, 1490 sparse"): one kind per
      // type, not one per count.
      if (const size_t comma = kind.rfind(", "); comma != std::string::npos && kind.ends_with(" sparse"))
        kind = kind.substr(0, comma) + " + sparse part";
      // The integer path runs the same int8 weights, on int8 inputs from integer ops.
      if (intonly_) kind = kind.substr(0, kind.find(',')) + ", integer-only: int8 matmul, int32 requantized";
      kinds[kind] += 1;
    }
  if (intonly_) {
    const int64_t per_layer = 2;  // q.k scores and probs x v, per decoder layer
    kinds["attention q.k and probs x v: integer-only (12-bit x 12-bit, Q15 x int8)"] +=
        per_layer * static_cast<int64_t>(layers_.size());
  }
  kinds["lm_head: " + without_shape(lm_head_->describe())] += 1;
  return kinds;
}

at::Tensor LlamaModel::head(const at::Tensor& hidden) const {
  return lm_head_->forward(rms_norm(hidden, final_norm_, cfg_.rms_norm_eps)).to(at::kFloat);
}

at::Tensor LlamaModel::forward(const at::Tensor& ids, KVCache* cache, Logits which) const {
  if (ids.dim() != 2) throw Error("forward", "token ids must be [batch, tokens]");
  const int64_t start = cache ? cache->length : 0;
  if (fast_ && cache && !intonly_ && fast_->accepts(ids, *cache)) {
    at::Tensor logits = at::empty({ids.size(0), 1, cfg_.vocab_size}, at::TensorOptions().dtype(at::kFloat));
    fast_->step(ids, *cache, rope_->tables(start + 1), logits.data_ptr<float>());
    cache->length += 1;
    return logits;
  }
  at::Tensor h = embed(ids);
  const RopeTables rope = rope_->tables(start + ids.size(1));
  if (intonly_) {
    if (cache)
      throw Error("forward", "the integer-only path evaluates whole windows without a KV cache; decoding with a "
                             "cache runs the checkpoint's w8a8static float path (RuntimeOptions::integer_only = "
                             "false, as fsq generate does)");
    h = intonly_->forward(h, rope);
  } else {
    for (size_t i = 0; i < layers_.size(); ++i)
      h = layers_[i].forward(h, rope, cfg_, start, cache, static_cast<int64_t>(i));
    if (cache) cache->length += ids.size(1);
  }
  return head(which == Logits::Last ? h.narrow(1, h.size(1) - 1, 1) : h);
}

bool LlamaModel::forward_positions(const int64_t* ids, int64_t count, KVCache& cache, float* logits) const {
  if (!fast_ || intonly_ || !fast_->accepts_rows(count, cache)) return false;
  fast_->step_rows(ids, count, cache, rope_->tables(cache.length + count), logits);
  cache.length += count;
  return true;
}

KVCache LlamaModel::new_cache(int64_t batch, int64_t max_len) const {
  KVCache c;
  c.capacity = std::min(max_len, cfg_.max_position_embeddings);
  auto opts = at::TensorOptions().dtype(opts_.compute_dtype).device(opts_.device);
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    c.k.push_back(at::zeros({batch, cfg_.num_kv_heads, c.capacity, cfg_.head_dim}, opts));
    c.v.push_back(at::zeros({batch, cfg_.num_kv_heads, c.capacity, cfg_.head_dim}, opts));
  }
  return c;
}

}  // namespace fsq
