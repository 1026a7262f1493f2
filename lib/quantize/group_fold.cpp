#include "quantize/group_fold.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "quantize/awq_fold.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {
namespace {

at::Tensor& norm_of(DecoderLayer& layer, const ArchSpec& arch, const std::string& pattern, const std::string& who) {
  if (pattern == arch.input_norm.hf) return layer.input_norm;
  if (pattern == arch.post_attn_norm.hf) return layer.post_attn_norm;
  throw Error(who, "no layer norm matches " + quote_name(pattern));
}

}  // namespace

std::string group_fold_blocker(const DecoderLayer& layer, const LinearGroup& group, int64_t input_width,
                               const std::string& who) {
  if (!group.norm.empty()) return "";
  if (group.producer.empty()) return "no norm or producing linear to fold scales into";
  if (dense_linear(layer, group.producer, who).weight().size(0) != input_width)
    return "the producer's outputs do not map one to one onto this group's inputs (grouped-query attention)";
  return "";
}

void fold_group_scales(DecoderLayer& layer, const ArchSpec& arch, const LinearGroup& group, const at::Tensor& s,
                       const std::string& who) {
  for (const std::string& role : group.roles) {
    const DenseLinear& d = dense_linear(layer, role, who);
    set_dense_linear(layer, role, scale_input_columns(d.weight().to(at::kFloat), s), d.bias());
  }
  if (!group.norm.empty()) {
    at::Tensor& norm = norm_of(layer, arch, group.norm, who);
    norm = fold_scales_into_norm(norm, s);
    return;
  }
  const DenseLinear& producer = dense_linear(layer, group.producer, who);
  LinearWeights folded = fold_scales_into_output_rows(producer.weight(), producer.bias(), s);
  set_dense_linear(layer, group.producer, folded.weight, folded.bias);
}

bool folds_through_shared_kv_heads(const DecoderLayer& layer, const LinearGroup& group, int64_t input_width,
                                   const std::string& who) {
  if (!group.norm.empty() || group.producer.empty()) return false;
  const int64_t rows = dense_linear(layer, group.producer, who).weight().size(0);
  return rows < input_width && input_width % rows == 0;
}

at::Tensor max_over_shared_kv_heads(const at::Tensor& per_channel, int64_t kv_rows, int64_t head_dim) {
  const int64_t kv_heads = kv_rows / head_dim, n_rep = per_channel.size(0) / kv_rows;
  at::Tensor pooled = std::get<0>(per_channel.view({kv_heads, n_rep, head_dim}).max(1));  // [kv_heads, head_dim]
  return pooled.unsqueeze(1).expand({kv_heads, n_rep, head_dim}).reshape({-1}).contiguous();
}

void fold_group_scales_shared_kv(DecoderLayer& layer, const LinearGroup& group, const at::Tensor& s, int64_t head_dim,
                                 const std::string& who) {
  for (const std::string& role : group.roles) {
    const DenseLinear& d = dense_linear(layer, role, who);
    set_dense_linear(layer, role, scale_input_columns(d.weight().to(at::kFloat), s), d.bias());
  }
  const DenseLinear& producer = dense_linear(layer, group.producer, who);
  const int64_t kv_rows = producer.weight().size(0);
  const int64_t kv_heads = kv_rows / head_dim, n_rep = s.size(0) / kv_rows;
  const at::Tensor per_row = s.view({kv_heads, n_rep, head_dim}).select(1, 0).reshape({-1}).contiguous();
  LinearWeights folded = fold_scales_into_output_rows(producer.weight(), producer.bias(), per_row);
  set_dense_linear(layer, group.producer, folded.weight, folded.bias);
}

}  // namespace fsq
