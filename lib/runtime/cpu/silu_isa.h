// The per-instruction-set halves of silu_mul (silu.h), called by its dispatcher (silu.cpp);
// the rules of uniform_isa.h apply to their files.
#pragma once

#include <cstdint>

namespace fsq::cpu {

void silu_mul_avx2(float* gate, const float* up, int64_t n);
void silu_mul_avx512(float* gate, const float* up, int64_t n);

}  // namespace fsq::cpu
