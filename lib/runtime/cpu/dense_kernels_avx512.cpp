// AVX-512 dense GEMV rows (compiled with -mavx512f ...; see dense_simd_loops.h).
#include "runtime/cpu/dense_simd_loops.h"
#include "runtime/cpu/simd_avx512.h"

namespace fsq::cpu {
namespace {

using Avx512Dense = avx512::VecOps;  // the dense loop needs no operations of its own

}  // namespace

void dense_rows_avx512(const DenseBatch& batch, int64_t row0, int64_t row1) {
  dense_rows_simd<Avx512Dense>(batch, row0, row1);
}

}  // namespace fsq::cpu
