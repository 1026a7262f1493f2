// Greedy generation with the KV cache.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

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

}  // namespace fsq
