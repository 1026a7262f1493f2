// The safetensors tensors of one PackedGroup: quantized linears bit-packed into their
// FORMAT.md tensors, dense tensors as given. Internal to the packed checkpoint writer.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "formats/packed_checkpoint.h"

namespace fsq {

struct GroupTensors {
  std::deque<std::vector<uint32_t>> packed;       // one per linear; a deque keeps spans valid
  std::deque<std::vector<uint16_t>> narrow_cols;  // LUT sparse columns stored as U16
  std::vector<TensorToWrite> tensors;             // point into the above and into the group
  std::vector<uint64_t> nbytes;                   // each tensor's size, known before packing
};

// Checks every matrix of the group (codes, scales, activation quant, uniform types for the
// head); throws fsq::Error(where, ...) naming the linear.
void check_group(const PackedGroup& g, const std::string& where);

// The group's tensors. With `pack` false the codes are not packed: the packed tensors then
// have empty data, and only their names, dtypes and shapes count (the writer's first pass).
GroupTensors group_tensors(const PackedGroup& g, bool pack);

// Names that a quantized linear `base` owns (qweight, scales, ... and base.weight, which
// must not be written next to it).
std::vector<std::string> quantized_linear_tensor_names(const std::string& base);

// The quant types of the group's linears and head matrices, by registry name.
std::set<std::string> group_quant_types(const PackedGroup& g);

}  // namespace fsq
