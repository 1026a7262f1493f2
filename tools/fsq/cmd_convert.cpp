// fsq convert: a llama.cpp GGUF file -> a Hugging Face checkpoint folder that transformers
// and every fsq command load; with --rotate, a checkpoint (folder or GGUF) -> the same model
// with its residual stream rotated (QuaRot/QSpec, quantize/rotation/rotate_model.h).
#include <cstdio>

#include "common/atomic_file.h"
#include "common/json_file.h"
#include "common/error.h"
#include "common/output_lock.h"
#include "formats/checkpoint.h"
#include "formats/gguf/gguf_model.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/hf_writer.h"
#include "formats/tokenizer/gguf_tokenizer.h"
#include "options.h"
#include "quantize/rotation/rotate_model.h"

namespace fsq::cli {
namespace {

struct ConvertFlags {
  std::string from = "gguf";
  std::string input;
  std::string out;
  std::string dtype = "bf16";
  std::string rotate;  // "", "hadamard" or "random"
  uint64_t seed = 0;
};

namespace fs = std::filesystem;

// --rotate: the rotated model in f32 (rounding it to 16 bits would undo the exactness the
// rotation keeps), with the source folder's tokenizer files.
int run_rotate(const ConvertFlags& f, bool dtype_given) {
  if (dtype_given && f.dtype != "f32")
    throw Error("--dtype " + f.dtype, "--rotate writes f32 weights (a 16-bit copy would not compute the same model)");
  const OutputLock lock = lock_output({f.out, "--out", OutputKind::Folder}, {f.input});
  const Checkpoint src = Checkpoint::open(f.input);
  RotateOptions opts;
  opts.kind = f.rotate == "random" ? RotationKind::Random : RotationKind::Hadamard;
  opts.seed = f.seed;
  const std::string how = describe_rotation(src, opts);
  const Checkpoint rotated = rotate_checkpoint(src, opts);
  HfWriteOptions w;
  w.dtype = DType::F32;
  const fs::path in = fs::is_directory(f.input) ? fs::path(f.input) : fs::path();
  if (is_gguf_path(f.input)) {
    auto gguf = GgufFile::open(f.input);
    GgufTokenizerFiles tok = gguf_tokenizer_files(*gguf);
    w.tokenizer_json = tok.tokenizer_json;
    w.tokenizer_config = tok.tokenizer_config;
  } else {
    if (fs::exists(in / "tokenizer.json")) w.tokenizer_json = read_json_file(in / "tokenizer.json");
    if (fs::exists(in / "tokenizer_config.json")) w.tokenizer_config = read_json_file(in / "tokenizer_config.json");
  }
  w.source_note = "fsq convert --rotate " + f.rotate + " --seed " + std::to_string(f.seed) + ": " + how + " of " +
                  fs::path(f.input).filename().string() + " (sha256 " + src.weights_sha256() + ")";
  write_hf_checkpoint(rotated, f.out, w);
  for (const char* extra : {"tokenizer.model", "special_tokens_map.json"})
    if (!in.empty() && fs::exists(in / extra)) fs::copy_file(in / extra, fs::path(f.out) / extra);
  std::printf("rotated %s -> %s (%s, %s, f32 weights, norms folded, head untied)\n", f.input.c_str(),
              f.out.c_str(), src.config().architecture.c_str(), how.c_str());
  return 0;
}

int run_convert(const ConvertFlags& f, bool dtype_given) {
  if (!f.rotate.empty()) return run_rotate(f, dtype_given);
  if (!is_gguf_path(f.input)) throw Error(f.input, "not a .gguf file");
  DType dtype = DType::BF16;
  if (f.dtype == "f32") dtype = DType::F32;
  else if (f.dtype == "f16") dtype = DType::F16;
  else if (f.dtype != "bf16") throw Error("--dtype " + f.dtype, "unknown dtype; use bf16, f16 or f32");

  // Refuse a busy destination before minutes of dequantizing (write_hf_checkpoint checks too).
  // One writer per output (common/output_lock.h), held until the last file is in place.
  const OutputLock lock = lock_output({f.out, "--out", OutputKind::Folder}, {f.input});
  auto gguf = GgufFile::open(f.input);
  GgufTokenizerFiles tok = gguf_tokenizer_files(*gguf);
  Checkpoint ckpt = Checkpoint::open(f.input);  // dequantized, HF names, Q/K un-permuted

  HfWriteOptions opts;
  opts.dtype = dtype;
  opts.tokenizer_json = tok.tokenizer_json;
  opts.tokenizer_config = tok.tokenizer_config;
  opts.source_note = "fsq convert --from gguf " + std::filesystem::path(f.input).filename().string() +
                     " (sha256 " + ckpt.weights_sha256() + ")";
  write_hf_checkpoint(ckpt, f.out, opts);
  if (!tok.sentencepiece_model.empty())
    write_file_atomic(std::filesystem::path(f.out) / "tokenizer.model", tok.sentencepiece_model);
  std::printf("converted %s -> %s (%s, %zu tensors, %s weights)\n", f.input.c_str(), f.out.c_str(),
              ckpt.config().architecture.c_str(), ckpt.tensors().size(), f.dtype.c_str());
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& root) {
  auto f = std::make_shared<ConvertFlags>();
  CLI::App* app = root.add_subcommand(
      "convert",
      "Convert a llama.cpp GGUF file into a Hugging Face checkpoint folder (config.json, "
      "model.safetensors, tokenizer files). Quantized GGUF weights are dequantized exactly. With --rotate, "
      "rotate a checkpoint's residual stream instead (QuaRot/QSpec: norms folded into the linears, then an "
      "orthogonal rotation that keeps the model's function; for 4-bit activations, --speculate qspec).");
  app->add_option("--from", f->from, "input format")->check(CLI::IsMember({"gguf"}))->capture_default_str();
  app->add_option("input", f->input, "the .gguf file (with --rotate: a checkpoint folder or .gguf file)")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("--out", f->out, "output folder (must not exist, or be empty)")->required();
  CLI::Option* dtype = app->add_option("--dtype", f->dtype, "weight dtype: bf16, f16 or f32 (--rotate: f32 only)")
                           ->capture_default_str();
  app->add_option("--rotate", f->rotate,
                  "rotate the residual stream: hadamard (randomized Hadamard; hidden sizes 2^k * 12^a * 20^b, "
                  "a, b <= 2) or random (seeded random orthogonal, any size)")
      ->check(CLI::IsMember({"hadamard", "random"}));
  app->add_option("--seed", f->seed, "seed of the rotation's random signs or matrix")->capture_default_str();
  app->footer(examples({"fsq convert --from gguf SmolLM2-135M-Instruct.Q4_1.gguf --out smollm2-hf",
                        "fsq convert --from gguf model.gguf --out model-f32 --dtype f32",
                        "fsq convert --rotate hadamard --seed 0 smollm2-hf --out smollm2-rotated"}));
  return Command{app, [f, dtype] { return run_convert(*f, dtype->count() > 0); }};
}

}  // namespace fsq::cli
