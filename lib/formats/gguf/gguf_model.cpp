#include "formats/gguf/gguf_model.h"

#include <charconv>
#include <cstdlib>

#include "common/error.h"
#include "common/sha256.h"
#include "formats/architectures.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"

namespace fsq {
namespace {

const ArchSpec& arch_of(const GgufFile& g) {
  const std::string& arch = g.require_string("general.architecture");
  if (const ArchSpec* a = find_gguf_arch_spec(arch)) return *a;
  throw Error(g.name(), "general.architecture '" + arch +
                            "' is not supported; supported: " + join_names(supported_gguf_architectures()));
}

// llama.cpp stores each head's rows as interleaved pairs (2j, 2j+1); HF keeps the halves
// apart (j, j + D/2). Row h*D + s*D/2 + j of HF is row h*D + 2j + s of GGUF.
std::vector<float> unpermute_rows(const std::vector<float>& w, int64_t heads, int64_t rows, int64_t cols) {
  const int64_t D = rows / heads, half = D / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t j = 0; j < half; ++j) {
        const float* src = w.data() + (h * D + 2 * j + s) * cols;
        std::copy(src, src + cols, out.data() + (h * D + s * half + j) * cols);
      }
  return out;
}

// GGUF stores f32; 1e-5 as f32 reads back as 9.99999974738e-06. Keep the shortest decimal
// that rounds to the same f32, as the HF config the file came from had it.
double shortest_decimal(double stored_as_f32) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, static_cast<float>(stored_as_f32));
  return std::strtod(std::string(buf, res.ptr).c_str(), nullptr);
}

}  // namespace

bool is_gguf_path(const std::filesystem::path& path) {
  std::error_code ec;
  return path.extension() == ".gguf" && std::filesystem::is_regular_file(path, ec);
}

ModelConfig model_config_from_gguf(const GgufFile& g) {
  const ArchSpec& a = arch_of(g);
  const std::string p = a.gguf_arch + ".";
  ModelConfig c;
  c.architecture = a.hf_name;
  c.model_type = a.model_type;
  c.num_layers = static_cast<int64_t>(g.get_u64(p + "block_count"));
  if (c.num_layers <= 0) throw Error(g.name(), p + "block_count must be positive, got " + std::to_string(c.num_layers));
  c.hidden_size = static_cast<int64_t>(g.get_u64(p + "embedding_length"));
  c.intermediate_size = static_cast<int64_t>(g.get_u64(p + "feed_forward_length"));
  c.num_heads = static_cast<int64_t>(g.get_u64(p + "attention.head_count"));
  c.num_kv_heads = g.find(p + "attention.head_count_kv") ? static_cast<int64_t>(g.get_u64(p + "attention.head_count_kv"))
                                                         : c.num_heads;
  c.max_position_embeddings = static_cast<int64_t>(g.get_u64(p + "context_length"));
  c.rms_norm_eps = shortest_decimal(g.get_f64(p + "attention.layer_norm_rms_epsilon"));
  c.rope_theta = g.find(p + "rope.freq_base") ? g.get_f64(p + "rope.freq_base") : 10000.0;
  if (c.num_heads <= 0 || c.hidden_size <= 0 || c.hidden_size % c.num_heads != 0)
    throw Error(g.name(), p + "embedding_length must be a positive multiple of attention.head_count");
  c.head_dim = g.find(p + "rope.dimension_count") ? static_cast<int64_t>(g.get_u64(p + "rope.dimension_count"))
                                                  : c.hidden_size / c.num_heads;
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
    throw Error(g.name(), p + "attention.head_count_kv must divide attention.head_count");
  if (const GgufValue* t = g.find(p + "rope.scaling.type"); t && g.get_string(p + "rope.scaling.type") != "none") {
    const std::string& type = g.get_string(p + "rope.scaling.type");
    if (type != "linear") throw Error(g.name(), "rope scaling '" + type + "' is not supported; supported: linear");
    c.rope_scaling = RopeScaling{"linear", g.get_f64(p + "rope.scaling.factor")};
  }
  if (g.find_tensor("rope_freqs.weight"))
    throw Error(g.name(), "tensor 'rope_freqs.weight' (llama3 RoPE scaling) is not supported yet");
  const GgufTensorInfo* embd = g.find_tensor(a.embed.gguf);
  if (!embd) throw Error(g.name(), "missing tensor '" + a.embed.gguf + "'");
  c.vocab_size = embd->shape()[0];
  c.tie_word_embeddings = g.find_tensor(a.lm_head.gguf) == nullptr;
  // llama.cpp records attention biases by their tensors alone (a LLaMA with attention_bias).
  c.attention_bias = a.forced_attention_bias();
  for (const LinearSpec& l : a.linears)
    if (l.bias == BiasRule::kIfAttentionBias && g.find_tensor(layer_name(l.gguf, 0) + ".bias") != nullptr)
      c.attention_bias = true;
  c.torch_dtype = "float32";
  if (g.find("tokenizer.ggml.bos_token_id")) c.bos_token_id = g.get_i64("tokenizer.ggml.bos_token_id");
  if (g.find("tokenizer.ggml.eos_token_id")) c.eos_token_id = g.get_i64("tokenizer.ggml.eos_token_id");
  return c;
}

std::string hf_tensor_name(const ArchSpec& arch, const std::string& name, const std::string& source,
                           const LinearSpec** linear) {
  std::string hf = arch.hf_name_of_gguf(name, linear);
  if (hf.empty()) throw Error(source, "tensor '" + name + "' has no Hugging Face counterpart that fsq knows");
  return hf;
}

Checkpoint checkpoint_from_gguf(const std::filesystem::path& path) {
  auto g = GgufFile::open(path);
  ModelConfig cfg = model_config_from_gguf(*g);
  const ArchSpec& arch = arch_of(*g);
  OwnedTensors owned;
  owned.buffers.reserve(g->tensors().size());
  for (const GgufTensorInfo& t : g->tensors()) {
    const LinearSpec* linear = nullptr;
    const std::string hf = hf_tensor_name(arch, t.name, path.string(), &linear);
    std::vector<float> values(static_cast<size_t>(t.n_elements));
    dequantize_row(t.type, t.data, values.data(), t.n_elements);
    const auto shape = t.shape();
    if (arch.gguf_qk_permuted && linear && linear->rotary_output) {
      const int64_t heads = linear->heads == OutputHeads::kQuery ? cfg.num_heads : cfg.num_kv_heads;
      const int64_t cols = shape.size() == 2 ? shape[1] : 1;
      if (shape[0] != heads * cfg.head_dim)
        throw Error(path.string(), "tensor '" + t.name + "' has " + std::to_string(shape[0]) + " rows, expected " +
                                       std::to_string(heads * cfg.head_dim));
      values = unpermute_rows(values, heads, shape[0], cols);
    }
    owned.buffers.push_back(std::move(values));
    const auto& buf = owned.buffers.back();
    owned.views.push_back(TensorView{hf, DType::F32, shape, reinterpret_cast<const std::byte*>(buf.data()),
                                     buf.size() * sizeof(float)});
  }
  return Checkpoint::from_memory(path, std::move(cfg), std::move(owned), sha256_file(path));
}

}  // namespace fsq
