// The last step of `fsq quantize`: the packed checkpoint made from the saved layers (so a
// resumed run writes the same bytes as an uninterrupted one) plus the source's other tensors
// (embedding and head, quantized with --head-bits), streamed into shards of at most
// config.max_shard_bytes one layer at a time, and published atomically. When it fails (a
// full disk), nothing is published and the saved layers stay for the rerun.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "quantize/layer_store.h"
#include "quantize/method.h"

namespace fsq {

class Checkpoint;

struct AssemblyInputs {
  const QuantizeConfig& config;
  const Checkpoint& checkpoint;
  const std::set<std::string>& linear_names;  // the quantized linears' weight names
  nlohmann::json calibration;                 // fsq.json "calibration"
  nlohmann::json run_options;                 // fsq.json "run_options"
};

// Writes config.out; returns the layers' reports ([{"layer", "report"}]).
nlohmann::json assemble_checkpoint(const AssemblyInputs& in, const QuantMethod& method, const LayerStore& store);

}  // namespace fsq
