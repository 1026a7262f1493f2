// AVX-512 dense GEMV rows (compiled with -mavx512f ...; see dense_simd_loops.h).
#include "runtime/cpu/dense_simd_loops.h"
#include "runtime/cpu/simd_avx512.h"

namespace fsq::cpu {
namespace {

struct Avx512Dense : avx512::VecOps {
  static Vec load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(first_lanes(n), p); }
};

}  // namespace

void dense_rows_avx512(const DenseBatch& batch, int64_t row0, int64_t row1) {
  dense_rows_simd<Avx512Dense>(batch, row0, row1);
}

}  // namespace fsq::cpu
