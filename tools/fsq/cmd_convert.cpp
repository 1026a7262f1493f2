// fsq convert: a llama.cpp GGUF file -> a Hugging Face checkpoint folder that transformers
// and every fsq command load.
#include <cstdio>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_lock.h"
#include "formats/checkpoint.h"
#include "formats/gguf/gguf_model.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/hf_writer.h"
#include "formats/tokenizer/gguf_tokenizer.h"
#include "options.h"

namespace fsq::cli {
namespace {

struct ConvertFlags {
  std::string from = "gguf";
  std::string input;
  std::string out;
  std::string dtype = "bf16";
};

int run_convert(const ConvertFlags& f) {
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
      "model.safetensors, tokenizer files). Quantized GGUF weights are dequantized exactly.");
  app->add_option("--from", f->from, "input format")->check(CLI::IsMember({"gguf"}))->capture_default_str();
  app->add_option("input", f->input, "the .gguf file")->required()->check(CLI::ExistingFile);
  app->add_option("--out", f->out, "output folder (must not exist, or be empty)")->required();
  app->add_option("--dtype", f->dtype, "weight dtype: bf16, f16 or f32")->capture_default_str();
  app->footer(examples({"fsq convert --from gguf SmolLM2-135M-Instruct.Q4_1.gguf --out smollm2-hf",
                        "fsq convert --from gguf model.gguf --out model-f32 --dtype f32"}));
  return Command{app, [f] { return run_convert(*f); }};
}

}  // namespace fsq::cli
