// Hugging Face checkpoint -> llama.cpp's layout, as convert_hf_to_gguf.py writes it: tensor
// names from the architecture table (formats/architectures.h) and, for architectures whose
// GGUF files llama.cpp permutes (LLaMA, Mistral), the q/k rows reordered per head from HF's
// rotate_half halves (j, j + D/2) to llama.cpp's interleaved pairs (2j, 2j + 1). This is the
// inverse of what gguf_model.cpp undoes on import.
#pragma once

#include <cstdint>
#include <string>

#include "formats/architectures.h"
#include "formats/model_config.h"

namespace fsq {

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight"; "" when the tensor is
// none of the architecture's. Sets *linear (when given) to the linear whose weight or bias
// it is, else nullptr.
std::string gguf_name_of_hf(const ArchSpec& arch, const std::string& hf_name, const LinearSpec** linear = nullptr);

// Head size whose rows llama.cpp's converter permutes for this tensor (the linear's
// head_dim), or 0 when it keeps HF's row order.
int64_t gguf_permuted_head_dim(const ArchSpec& arch, const LinearSpec* linear, const ModelConfig& config);

// The HF row that GGUF row `r` of a permuted tensor holds (head size `head_dim`, even).
inline int64_t hf_row_of_gguf_row(int64_t r, int64_t head_dim) {
  const int64_t head = r / head_dim, within = r % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

}  // namespace fsq
