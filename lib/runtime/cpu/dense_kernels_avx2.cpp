// AVX2 dense GEMV rows (compiled with -mavx2 -mfma -mf16c; see dense_simd_loops.h).
#include "runtime/cpu/dense_simd_loops.h"
#include "runtime/cpu/simd_avx2.h"

namespace fsq::cpu {
namespace {

using Avx2Dense = avx2::VecOps;  // the dense loop needs no operations of its own

}  // namespace

void dense_rows_avx2(const DenseBatch& batch, int64_t row0, int64_t row1) {
  dense_rows_simd<Avx2Dense>(batch, row0, row1);
}

}  // namespace fsq::cpu
