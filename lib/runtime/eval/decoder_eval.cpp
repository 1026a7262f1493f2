#include "runtime/eval/decoder_eval.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "runtime/cuda/decode_model.h"
#include "runtime/eval/timing.h"

namespace fsq {
namespace {

// One step of `decoder` or an fsq::Error with its reason.
void step_or_throw(cuda::Decoder& decoder, const std::vector<int32_t>& ids, int64_t pos, std::vector<float>& logits) {
  if (const std::string e = decoder.step(ids.data(), pos, logits.data()); !e.empty())
    throw Error("decode step " + std::to_string(pos), e);
}

}  // namespace

LogitsFn decoder_logits(std::shared_ptr<cuda::Decoder> decoder, int64_t batch, int64_t capacity, int64_t vocab) {
  return [decoder, batch, capacity, vocab](const at::Tensor& ids) {
    const int64_t rows = ids.size(0), length = ids.size(1);
    if (rows < 1 || rows > batch || length > capacity)
      throw Error("decoder", "made for " + std::to_string(batch) + " sequences of " + std::to_string(capacity) +
                                 " positions, given " + std::to_string(rows) + " of " + std::to_string(length));
    const at::Tensor tokens = ids.to(at::kCPU, at::kLong).contiguous();
    const int64_t* token = tokens.data_ptr<int64_t>();
    at::Tensor out = at::empty({rows, length, vocab}, at::kFloat);
    float* dst = out.data_ptr<float>();
    std::vector<int32_t> step_ids(static_cast<size_t>(batch));
    std::vector<float> logits(static_cast<size_t>(batch * vocab));
    for (int64_t t = 0; t < length; ++t) {
      for (int64_t b = 0; b < batch; ++b) step_ids[b] = static_cast<int32_t>(token[std::min(b, rows - 1) * length + t]);
      step_or_throw(*decoder, step_ids, t, logits);
      for (int64_t b = 0; b < rows; ++b)
        std::memcpy(dst + (b * length + t) * vocab, logits.data() + b * vocab, static_cast<size_t>(vocab) * sizeof(float));
    }
    return out;
  };
}

SpeedResult measure_decoder_speed(const DecoderFactory& make, int64_t vocab, int64_t max_positions,
                                  const SpeedOptions& o) {
  SpeedResult r;
  const int64_t prompt = std::clamp<int64_t>(o.decode_prompt, 1, std::max<int64_t>(1, max_positions - 1));
  const int64_t steps = std::clamp<int64_t>(o.decode_steps, 1, std::max<int64_t>(1, max_positions - prompt));
  for (int64_t requested : o.decode_batches) {
    const int64_t batch = std::max<int64_t>(1, requested);
    const std::unique_ptr<cuda::Decoder> decoder = make(batch, prompt + steps);
    const at::Tensor start = timing::synthetic_ids(batch, prompt, vocab, c10::Device(c10::kCPU)).contiguous();
    std::vector<int32_t> ids(static_cast<size_t>(batch));
    std::vector<float> logits(static_cast<size_t>(batch * vocab));
    const auto once = [&] {
      for (int64_t t = 0; t < prompt; ++t) {
        for (int64_t b = 0; b < batch; ++b) ids[b] = static_cast<int32_t>(start[b][t].item<int64_t>());
        step_or_throw(*decoder, ids, t, logits);
      }
      const auto t0 = timing::Clock::now();
      for (int64_t s = 0; s < steps; ++s) {
        for (int64_t b = 0; b < batch; ++b) {  // greedy, as measure_speed decodes
          const auto row = logits.begin() + b * vocab;
          ids[b] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
        }
        step_or_throw(*decoder, ids, prompt + s, logits);
      }
      return timing::seconds_since(t0);
    };
    const auto [seconds, reps] = timing::median_time(o.min_seconds, o.max_reps, once);
    r.decode.push_back(DecodeSpeed{batch, prompt, steps, reps, seconds});
  }
  return r;
}

}  // namespace fsq
