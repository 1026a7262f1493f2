// silu_mul's spec and ISA dispatch (the SIMD loops: silu_simd.h).
#include "runtime/cpu/silu.h"

#include <cmath>

#include "runtime/cpu/silu_isa.h"

namespace fsq::cpu {

void silu_mul_reference(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void silu_mul(float* gate, const float* up, int64_t n, CpuIsa isa) {
  if (n <= 0) return;
  if (isa == CpuIsa::Avx512 && cpu_supports(isa))
    silu_mul_avx512(gate, up, n);
  else if ((isa == CpuIsa::Avx2 || isa == CpuIsa::Avx512) && cpu_supports(CpuIsa::Avx2))
    silu_mul_avx2(gate, up, n);
  else
    silu_mul_reference(gate, up, n);
}

}  // namespace fsq::cpu
