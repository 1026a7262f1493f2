// decode_attention's checks, ISA dispatch, scalar version and double-precision spec.
#include "runtime/cpu/decode_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/decode_attention_isa.h"

namespace fsq::cpu {
namespace {

bool valid_args(const DecodeAttentionArgs& a) {
  return a.q != nullptr && a.keys != nullptr && a.values != nullptr && a.scores != nullptr && a.out != nullptr &&
         a.heads > 0 && a.keys_count > 0 && a.head_dim > 0;
}

void decode_attention_scalar(const DecodeAttentionArgs& a) {
  const int64_t D = a.head_dim, S = a.keys_count;
  for (int64_t h = 0; h < a.heads; ++h) {
    const float* q = a.q + h * D;
    float* p = a.scores + h * S;
    float top = -INFINITY;
    for (int64_t s = 0; s < S; ++s) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += q[d] * a.keys[s * D + d];
      p[s] = dot * a.scale;
      top = std::max(top, p[s]);
    }
    float total = 0.0f;
    for (int64_t s = 0; s < S; ++s) total += (p[s] = std::exp(p[s] - top));
    for (int64_t s = 0; s < S; ++s) p[s] /= total;
    float* out = a.out + h * D;
    std::fill(out, out + D, 0.0f);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d) out[d] += p[s] * a.values[s * D + d];
  }
}

}  // namespace

KernelStatus decode_attention_reference(const DecodeAttentionArgs& a) {
  if (!valid_args(a)) return KernelStatus::InvalidArgument;
  const int64_t D = a.head_dim, S = a.keys_count;
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t h = 0; h < a.heads; ++h) {
    double top = -INFINITY;
    for (int64_t s = 0; s < S; ++s) {
      double dot = 0.0;
      for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(a.q[h * D + d]) * a.keys[s * D + d];
      p[static_cast<size_t>(s)] = dot * a.scale;
      top = std::max(top, p[static_cast<size_t>(s)]);
    }
    double total = 0.0;
    for (double& v : p) total += (v = std::exp(v - top));
    for (int64_t d = 0; d < D; ++d) {
      double sum = 0.0;
      for (int64_t s = 0; s < S; ++s) sum += p[static_cast<size_t>(s)] / total * a.values[s * D + d];
      a.out[h * D + d] = static_cast<float>(sum);
    }
  }
  return KernelStatus::Ok;
}

KernelStatus decode_attention(const DecodeAttentionArgs& a, CpuIsa isa) {
  if (!valid_args(a)) return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  switch (isa) {
    case CpuIsa::Avx512: decode_attention_avx512(a); break;
    case CpuIsa::Avx2: decode_attention_avx2(a); break;
    case CpuIsa::Scalar: decode_attention_scalar(a); break;
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
