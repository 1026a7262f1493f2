// fsq eval on a one-step decoder (fsq's CUDA decoder, runtime/cuda/decode_model.h): windows fed
// token by token as logits for the perplexity driver, and decode speed. The decoder runs a
// fixed batch (its CUDA graph is captured for it): smaller batches are padded with copies of
// their last sequence, whose rows are dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/decoder_choice.h"  // DecoderFactory, cuda::Decoder
#include "runtime/eval/perplexity.h"
#include "runtime/eval/speed.h"

namespace fsq {

// ids int64 [B, T] (B <= batch, T <= capacity) -> fp32 logits [B, T, vocab] on the CPU: T
// steps of `decoder` from position 0. Throws fsq::Error with the decoder's reason when a step
// fails, or for a batch or window it was not made for.
LogitsFn decoder_logits(std::shared_ptr<cuda::Decoder> decoder, int64_t batch, int64_t capacity, int64_t vocab);

// Decode tokens/s at opts.decode_batches: a decoder per batch size, the prompt's steps, then
// the timed steps (median of repetitions, as measure_speed). No prefill entries: prompts run
// token by token on this path.
SpeedResult measure_decoder_speed(const DecoderFactory& make, int64_t vocab, int64_t max_positions,
                                  const SpeedOptions& opts);

}  // namespace fsq
