#include "runtime/intonly_model.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "formats/architectures.h"
#include "formats/packed_checkpoint.h"
#include "runtime/cpu/intonly_attention.h"
#include "runtime/decoder_layer.h"
#include "runtime/rope.h"

namespace fsq {

IntonlyStack::IntonlyStack(const std::vector<DecoderLayer>& layers, const ModelConfig& cfg, const ArchSpec& arch,
                           const PackedCheckpoint& packed, IntonlyInputs inputs)
    : inputs_(inputs) {
  layers_.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string name = layer_name(arch.layer_prefix + kIntonlyRangesSuffix, static_cast<int64_t>(i));
    const TensorView* ranges = packed.intonly_ranges(name);
    if (!ranges)
      throw Error(packed.dir().string(), "integer-only checkpoint lacks tensor " + quote_name(name) +
                                             " (every decoder layer needs its ranges)");
    std::vector<float> r(kIntonlyRangeCount);
    std::memcpy(r.data(), ranges->data, r.size() * sizeof(float));
    layers_.emplace_back(layers[i], cfg, r.data(), static_cast<int64_t>(i), inputs);
  }
  for (size_t i = 0; i + 1 < layers_.size(); ++i)
    between_.push_back(cpu::dyadic_from_real(layers_[i].residual_scale() / layers_[i + 1].residual_scale()));
}

FixedRope fixed_rope(const RopeTables& rope, int64_t positions) {
  FixedRope f;
  f.positions = positions;
  f.head_dim = rope.cos.size(1);
  auto fixed = [&](const at::Tensor& t) {
    const at::Tensor q = (t.narrow(0, 0, positions).to(at::kDouble).cpu() * std::ldexp(1.0, cpu::kRopeFracBits))
                             .round()
                             .to(at::kInt)
                             .contiguous();
    return std::vector<int32_t>(q.data_ptr<int32_t>(), q.data_ptr<int32_t>() + q.numel());
  };
  f.cos = fixed(rope.cos);
  f.sin = fixed(rope.sin);
  return f;
}

at::Tensor IntonlyStack::forward(const at::Tensor& embedded, const RopeTables& rope) const {
  if (!embedded.device().is_cpu())
    throw Error("integer-only forward", "runs on the CPU; the input is on " + embedded.device().str());
  const int64_t B = embedded.size(0), T = embedded.size(1), H = embedded.size(2);
  if (layers_.empty()) return embedded;
  // The embedding, quantized to layer 0's residual scale (the last floating-point step before
  // the integer layers).
  const double s0 = layers_.front().residual_scale();
  at::Tensor codes = (embedded.to(at::kDouble) / s0).round().clamp(INT32_MIN, INT32_MAX).to(at::kInt).contiguous();
  int32_t* h = codes.data_ptr<int32_t>();
  const FixedRope fr = fixed_rope(rope, T);
  const int64_t n = B * T * H;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (i > 0) {
      const cpu::Dyadic d = between_[i - 1];
      at::parallel_for(0, n, 1 << 16, [&](int64_t a, int64_t b) {
        for (int64_t j = a; j < b; ++j) h[j] = cpu::requantize(h[j], d);
      });
    }
    layers_[i].forward(h, B, T, fr);
  }
  return (codes.to(at::kDouble) * layers_.back().residual_scale()).to(embedded.scalar_type());
}

std::vector<std::string> IntonlyStack::integer_ops() const {
  return {"rmsnorm (i-RMSNorm, int16 gains)", "q/k/v/o/gate/up/down int8 matmul (int32 accumulators, dyadic requantization)",
          inputs_ == IntonlyInputs::Token
              ? "o_proj/down_proj inputs: int8 at a power-of-two scale per token (integer max and shift)"
              : "o_proj/down_proj inputs: int8 at static per-tensor scales",
          "rope (Q14 tables)", "attention scores (12-bit q.k, int32)", "softmax (i-softmax, Q15)",
          "attention x v (Q15 x int8)", "silu (i-SiLU) and the product with up", "residual adds (int32)"};
}

const std::vector<std::string>& IntonlyStack::float_ops() {
  static const std::vector<std::string> ops = {"embedding (then quantized to the residual scale)", "final norm",
                                               "lm_head"};
  return ops;
}

}  // namespace fsq
