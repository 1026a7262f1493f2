#include "formats/hf_writer.h"

#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "formats/safetensors.h"
#include "formats/tensor_convert.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

std::string torch_dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "float32";
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
    default: throw Error("--dtype", "only f32, bf16 and f16 checkpoints can be written");
  }
}

}  // namespace

nlohmann::json model_config_to_json(const ModelConfig& c) {
  nlohmann::json j = {
      {"architectures", {c.architecture}},
      {"model_type", c.model_type},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_position_embeddings},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", nullptr},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"torch_dtype", c.torch_dtype},
  };
  // Architectures that always have their biases (Qwen2) have no attention_bias key.
  const ArchSpec* arch = find_arch_spec(c.architecture);
  if (!arch || !arch->forced_attention_bias()) j["attention_bias"] = c.attention_bias;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  if (c.rope_scaling) {
    const RopeScaling& s = *c.rope_scaling;
    j["rope_scaling"] = {{"rope_type", s.type}, {"factor", s.factor}};
    if (s.type == "llama3") {
      j["rope_scaling"]["low_freq_factor"] = s.low_freq_factor;
      j["rope_scaling"]["high_freq_factor"] = s.high_freq_factor;
      j["rope_scaling"]["original_max_position_embeddings"] = s.original_max_position_embeddings;
    }
  }
  return j;
}

void write_hf_checkpoint(const Checkpoint& src, const fs::path& out, const HfWriteOptions& opts) {
  AtomicDir dir(out);  // removes its staging folder on any failure
  const fs::path& staging = dir.staging();
  ModelConfig cfg = src.config();
  cfg.torch_dtype = torch_dtype_name(opts.dtype);
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> tensors;
  const auto views = src.tensors();
  storage.reserve(views.size());
  for (const TensorView* t : views) {
    storage.push_back(convert_float_tensor(*t, opts.dtype));
    tensors.push_back({t->name, opts.dtype, t->shape, storage.back()});
  }
  std::map<std::string, std::string> meta = {{"format", "pt"}};
  if (!opts.source_note.empty()) meta["source"] = opts.source_note;
  write_safetensors(staging / "model.safetensors", tensors, meta);
  write_file_atomic(staging / "config.json", model_config_to_json(cfg).dump(2) + "\n");
  nlohmann::json gen = {{"do_sample", false}};
  if (cfg.bos_token_id >= 0) gen["bos_token_id"] = cfg.bos_token_id;
  if (cfg.eos_token_id >= 0) gen["eos_token_id"] = cfg.eos_token_id;
  write_file_atomic(staging / "generation_config.json", gen.dump(2) + "\n");
  if (!opts.tokenizer_json.is_null())
    write_file_atomic(staging / "tokenizer.json", opts.tokenizer_json.dump(1) + "\n");
  if (!opts.tokenizer_config.is_null())
    write_file_atomic(staging / "tokenizer_config.json", opts.tokenizer_config.dump(2) + "\n");
  dir.commit();
}

}  // namespace fsq
