// The integer-only decoder stack of an intonly checkpoint (fsq quantize --method intonly):
// the embedding's output is quantized to layer 0's residual scale, every decoder layer runs
// as an IntonlyLayer (runtime/intonly_layer.h) on int32 residual codes, the codes are
// requantized between layers with a dyadic multiplier and turned back into floats for the
// final norm and lm_head. LlamaModel::forward uses it when the checkpoint carries the
// integer-only ranges (RuntimeOptions::integer_only, on by default).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "runtime/intonly_layer.h"

namespace fsq {

struct ArchSpec;
struct DecoderLayer;
struct ModelConfig;
struct RopeTables;
class PackedCheckpoint;

class IntonlyStack {
 public:
  // layers: the model's decoder layers (w8a8static Int8Linears; referenced, not copied: they
  // must outlive the stack). Throws fsq::Error naming the layer when its ranges tensor is
  // missing or a linear is not w8a8static.
  IntonlyStack(const std::vector<DecoderLayer>& layers, const ModelConfig& cfg, const ArchSpec& arch,
               const PackedCheckpoint& packed, IntonlyInputs inputs = IntonlyInputs::Token);

  // embedded: [B, T, hidden] floating (positions 0 .. T-1); rope: float tables covering T.
  // Returns the last layer's output as float [B, T, hidden] in embedded's dtype.
  at::Tensor forward(const at::Tensor& embedded, const RopeTables& rope) const;

  // What runs in integers and what in floating point, for the eval report.
  std::vector<std::string> integer_ops() const;
  static const std::vector<std::string>& float_ops();
  size_t layers() const { return layers_.size(); }

 private:
  std::vector<IntonlyLayer> layers_;
  std::vector<cpu::Dyadic> between_;  // [layers - 1]: S_r(i) / S_r(i + 1)
  IntonlyInputs inputs_ = IntonlyInputs::Token;
};

// round(table * 2^kRopeFracBits) of the float rotary tables' first `positions` rows.
FixedRope fixed_rope(const RopeTables& rope, int64_t positions);

}  // namespace fsq
