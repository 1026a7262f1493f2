// fsq generate: greedy continuation of a prompt, a quick check that a model works.
#include <c10/core/InferenceMode.h>

#include <cstdio>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "formats/tokenizer.h"
#include "options.h"
#include "runtime/decoder_choice.h"
#include "runtime/generate.h"
#include "runtime/model_files.h"
#include "runtime/torch_bridge.h"

namespace fsq::cli {
namespace {

struct GenerateFlags {
  std::string model, prompt;
  int64_t n = 32;
  bool ids = false;
  std::string logits;
  bool force = false;
  RuntimeFlags rt;
};

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

int run_generate(const GenerateFlags& f) {
  // Bad options fail before the model loads.
  if (!f.logits.empty() && f.n < 1)
    throw Error("--logits", "the prompt's logits come from the first generation step: give -n >= 1");
  check_output_file(f.logits, "--logits", {f.model}, f.force);
  apply_threads(f.rt.threads);
  c10::InferenceMode no_autograd;
  // --device cuda: the model loads on the CPU, and where fsq's CUDA decoder runs it (packed
  // uniform or LUT checkpoints, f32 models rounded to fp16) its steps run there, f16 values
  // between the ops; other models go to LibTorch's CUDA when it has it.
  DeviceRequest device;
  RuntimeOptions ro = runtime_options(f.rt, &device);
  // Generation decodes with a KV cache, which the integer-only path does not keep: an intonly
  // checkpoint decodes on its float path (the same w8a8static linears).
  ro.integer_only = false;
  ModelFiles files = ModelFiles::open(f.model);
  if (files.packed && files.packed->has_intonly_ranges())
    std::fprintf(stderr, "fsq: note: integer-only checkpoint: generation runs its w8a8static float path (the "
                         "integer path evaluates whole windows without a KV cache; fsq eval runs it)\n");
  const Checkpoint& ckpt = *files.checkpoint;
  auto tok = load_tokenizer(f.model);
  auto model = files.load(ro);
  // The model's default tokenization: BOS first when the tokenizer's add-BOS flag is set.
  std::vector<int32_t> prompt = tok->encode_default(f.prompt);
  if (prompt.empty()) throw Error("--prompt", "encodes to no tokens and the tokenizer adds no BOS");
  const int64_t room = ckpt.config().max_position_embeddings - static_cast<int64_t>(prompt.size());
  if (f.n > room)
    throw Error("-n", "prompt + new tokens exceed the model's max_position_embeddings",
                "<= " + std::to_string(std::max<int64_t>(room, 0)), std::to_string(f.n));
  GenerateOptions go;
  go.max_new_tokens = f.n;
  go.stop_token = tok->eos_id();
  std::vector<float> prompt_logits;
  if (!f.logits.empty()) go.prompt_logits = &prompt_logits;
  const int64_t capacity = static_cast<int64_t>(prompt.size()) + f.n;
  const DecoderChoice choice = choose_decoder(*model, device, capacity);
  if (choice.reload_on) {
    ro.device = *choice.reload_on;
    model = files.load(ro);
  }
  const std::vector<int32_t> out = generate_greedy(*model, choice, capacity, prompt, go);
  std::printf("%s\n", tok->decode(out).c_str());
  if (f.ids) std::printf("ids: %s\n", ids_text(out).c_str());
  if (!f.logits.empty()) {
    const int64_t vocab = static_cast<int64_t>(prompt_logits.size() / prompt.size());
    write_safetensors(f.logits,
                      {{"logits", DType::F32, {static_cast<int64_t>(prompt.size()), vocab},
                        std::as_bytes(std::span<const float>(prompt_logits))},
                       {"ids", DType::I32, {static_cast<int64_t>(out.size())}, std::as_bytes(std::span<const int32_t>(out))}},
                      {{"prompt_tokens", std::to_string(prompt.size())}});
  }
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& root) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* app = root.add_subcommand(
      "generate", "Greedy (argmax) generation with the KV cache: prints the prompt and its continuation.");
  app->add_option("--model", f->model, "checkpoint directory or .gguf file")->required()->check(CLI::ExistingPath);
  app->add_option("--prompt", f->prompt, "prompt text (BOS is added per the tokenizer's policy)")->required();
  app->add_option("-n,--max-new-tokens", f->n, "tokens to generate (stops early at EOS)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--ids", f->ids, "also print the token ids (prompt + generated)");
  app->add_option("--logits", f->logits,
                  "also write a .safetensors file: \"logits\" F32 [prompt tokens, vocab] of every prompt position "
                  "and \"ids\" I32 (prompt + generated), to compare with another engine");
  add_force_flag(app, f->force);
  add_runtime_flags(app, f->rt);
  add_decode_flags(app, f->rt);
  app->footer(examples({"fsq generate --model models/stories260K --prompt \"Once upon a time\" -n 40",
                        "fsq generate --model DIR --prompt \"The capital of France is\" -n 16 --ids --threads 4",
                        "fsq generate --model DIR --prompt \"Hello\" -n 32 --logits hello.safetensors",
                        "fsq generate --model DIR --prompt \"Once upon a time\" -n 64 --device cuda   "
                        "(fsq's CUDA decoder: fsq quantize checkpoints, f32 models as fp16)"}));
  return Command{app, [f] { return run_generate(*f); }};
}

}  // namespace fsq::cli
