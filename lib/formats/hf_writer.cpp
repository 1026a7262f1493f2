#include "formats/hf_writer.h"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/half.h"
#include "formats/safetensors.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// Converts a tensor's elements to `dtype` (from any float type the readers produce).
std::vector<std::byte> convert(const TensorView& t, DType dtype) {
  const int64_t n = t.numel();
  std::vector<float> f32(static_cast<size_t>(n));
  if (t.dtype == DType::F32) {
    std::memcpy(f32.data(), t.data, t.nbytes);
  } else if (t.dtype == DType::BF16 || t.dtype == DType::F16) {
    const auto* h = reinterpret_cast<const uint16_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) f32[i] = t.dtype == DType::BF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
  } else {
    throw Error(t.name, std::string("cannot convert dtype ") + std::string(dtype_name(t.dtype)));
  }
  std::vector<std::byte> out(static_cast<size_t>(n) * dtype_size(dtype));
  if (dtype == DType::F32) {
    std::memcpy(out.data(), f32.data(), out.size());
  } else {
    auto* h = reinterpret_cast<uint16_t*>(out.data());
    for (int64_t i = 0; i < n; ++i) h[i] = dtype == DType::BF16 ? f32_to_bf16(f32[i]) : f32_to_f16(f32[i]);
  }
  return out;
}

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
  if (c.model_type != "qwen2") j["attention_bias"] = c.attention_bias;
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
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw Error(out.string(), "output folder exists and is not empty; choose a new --out or remove it");
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) throw Error(out.string(), "parent folder does not exist");
  // Staging folder beside the destination, so the final rename stays on one file system.
  const fs::path staging = parent / (out.filename().string() + ".partial." + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directory(staging);
  try {
    ModelConfig cfg = src.config();
    cfg.torch_dtype = torch_dtype_name(opts.dtype);
    std::vector<std::vector<std::byte>> storage;
    std::vector<TensorToWrite> tensors;
    const auto views = src.tensors();
    storage.reserve(views.size());
    for (const TensorView* t : views) {
      storage.push_back(convert(*t, opts.dtype));
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
    if (fs::exists(out, ec)) fs::remove(out);  // the empty folder the user made
    fs::rename(staging, out);
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace fsq
