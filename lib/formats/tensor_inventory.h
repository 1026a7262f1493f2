// Which of a checkpoint's tensors the architecture reads. A tensor nobody reads would be
// ignored silently (a typo'd name, a layer the config does not count, a head that
// tie_word_embeddings hides), so models refuse it; a few known-harmless extras are only
// listed (by `fsq inspect`).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "formats/architectures.h"
#include "formats/checkpoint.h"

namespace fsq {

struct IgnoredTensor {
  std::string name;
  std::string why;  // "rotary cache; recomputed from rope_theta"
};

struct TensorInventory {
  std::vector<IgnoredTensor> ignored;  // harmless extras, in name order
  std::vector<std::string> unused;     // everything else nobody reads, in name order
};

// Every tensor name the runtime reads for `cfg` (layers, biases and head as the config and
// the architecture table say), in no particular order.
std::set<std::string> expected_tensor_names(const ArchSpec& arch, const ModelConfig& cfg);

// Sorts the checkpoint's tensors that are not expected. `also_read` names tensors a reader
// beside the checkpoint accounts for (a packed checkpoint's qweight/scales/qzeros).
TensorInventory take_tensor_inventory(const Checkpoint& ckpt, const std::set<std::string>& also_read = {});

// Throws fsq::Error naming the checkpoint, the first unused tensor and how many there are.
void check_no_unused_tensors(const Checkpoint& ckpt, const std::set<std::string>& also_read = {});

}  // namespace fsq
