#include "runtime/generate.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/error.h"
#include "runtime/cuda/decode_model.h"

namespace fsq {

std::vector<int32_t> generate_greedy(const LlamaModel& model, const std::vector<int32_t>& prompt,
                                     const GenerateOptions& opts, const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) throw Error("generate", "empty prompt (no tokens); give a prompt or a BOS token");
  const int64_t total = static_cast<int64_t>(prompt.size()) + opts.max_new_tokens;
  if (total > model.config().max_position_embeddings)
    throw Error("generate", "prompt + new tokens = " + std::to_string(total) + " exceeds the model's maximum " +
                                std::to_string(model.config().max_position_embeddings));
  std::vector<int32_t> out = prompt;
  KVCache cache = model.new_cache(1, total);
  std::vector<int64_t> ids64(prompt.begin(), prompt.end());
  at::Tensor ids = at::tensor(ids64, at::kLong).view({1, -1}).to(model.options().device);
  for (int64_t step = 0; step < opts.max_new_tokens; ++step) {
    const bool all_rows = step == 0 && opts.prompt_logits != nullptr;
    at::Tensor logits = model.forward(ids, &cache, all_rows ? LlamaModel::Logits::All : LlamaModel::Logits::Last);
    if (all_rows) {
      const at::Tensor rows = logits[0].to(at::kCPU, at::kFloat).contiguous();
      opts.prompt_logits->assign(rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
    }
    const int32_t next = static_cast<int32_t>(logits[0][-1].argmax().item<int64_t>());
    out.push_back(next);
    if (on_token) on_token(next);
    if (next == opts.stop_token) break;
    ids = at::full({1, 1}, next, at::TensorOptions().dtype(at::kLong).device(model.options().device));
  }
  return out;
}

std::vector<int32_t> generate_greedy_steps(cuda::Decoder& decoder, int64_t vocab, int64_t capacity,
                                           const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                           const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) throw Error("generate", "empty prompt (no tokens); give a prompt or a BOS token");
  const auto prompt_length = static_cast<int64_t>(prompt.size());
  if (prompt_length + opts.max_new_tokens > capacity)
    throw Error("generate", "prompt + new tokens = " + std::to_string(prompt_length + opts.max_new_tokens) +
                                " exceed the decoder's " + std::to_string(capacity) + " positions");
  std::vector<int32_t> out = prompt;
  if (opts.max_new_tokens == 0) return out;
  std::vector<float> logits(static_cast<size_t>(vocab));
  const auto run = [&](int32_t id, int64_t pos) {
    if (const std::string e = decoder.step(&id, pos, logits.data()); !e.empty()) throw Error("generate", e);
  };
  if (opts.prompt_logits) opts.prompt_logits->clear();
  for (int64_t pos = 0; pos < prompt_length; ++pos) {
    run(prompt[static_cast<size_t>(pos)], pos);
    if (opts.prompt_logits) opts.prompt_logits->insert(opts.prompt_logits->end(), logits.begin(), logits.end());
  }
  for (int64_t step = 0; step < opts.max_new_tokens; ++step) {
    if (step > 0) run(out.back(), prompt_length + step - 1);
    const auto next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(next);
    if (on_token) on_token(next);
    if (next == opts.stop_token) break;
  }
  return out;
}

std::vector<int32_t> generate_greedy(const LlamaModel& model, const DecoderChoice& choice, int64_t capacity,
                                     const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                     const std::function<void(int32_t)>& on_token) {
  if (!choice.cuda) return generate_greedy(model, prompt, opts, on_token);
  const std::unique_ptr<cuda::Decoder> decoder = choice.cuda(1, capacity);
  return generate_greedy_steps(*decoder, model.config().vocab_size, capacity, prompt, opts, on_token);
}

}  // namespace fsq
