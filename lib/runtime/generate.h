// Greedy generation with the KV cache.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/decoder_choice.h"
#include "runtime/model.h"

namespace fsq {

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  int64_t stop_token = -1;  // stop after emitting this id (-1: never)
  // When set: receives the fp32 logits of every prompt position, [prompt length, vocab]
  // row-major, from the prefill step (the same pass that picks the first new token).
  std::vector<float>* prompt_logits = nullptr;
};

// Returns the prompt followed by the generated ids. `on_token` (optional) sees each new id.
std::vector<int32_t> generate_greedy(const LlamaModel& model, const std::vector<int32_t>& prompt,
                                     const GenerateOptions& opts,
                                     const std::function<void(int32_t)>& on_token = {});

// The same greedy loop on a decoder that runs one token of one sequence per step (the CUDA
// decoder, runtime/cuda/decode_model.h, made for batch 1 and `capacity` positions): the prompt
// goes in token by token, and its logits rows are those steps' logits. Throws fsq::Error when
// prompt + new tokens exceed the capacity, or with the decoder's reason when a step fails.
std::vector<int32_t> generate_greedy_steps(cuda::Decoder& decoder, int64_t vocab, int64_t capacity,
                                           const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                           const std::function<void(int32_t)>& on_token = {});

// Greedy generation on what choose_decoder picked for `model` (runtime/decoder_choice.h):
// fsq's CUDA decoder, made here for batch 1 and `capacity` positions (generate_greedy_steps),
// or the model's own layers (generate_greedy). choice.reload_on must have been acted on.
std::vector<int32_t> generate_greedy(const LlamaModel& model, const DecoderChoice& choice, int64_t capacity,
                                     const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                     const std::function<void(int32_t)>& on_token = {});

}  // namespace fsq
