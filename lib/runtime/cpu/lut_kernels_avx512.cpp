// AVX-512 (F, BW, VL) variant of the LUT kernels: 16 lanes. Compiled with -mavx512f
// -mavx512bw -mavx512vl -mfma -mf16c (lib/runtime/CMakeLists.txt); called only when
// cpu_supports(CpuIsa::Avx512). The vector ops are in lut_avx512_ops.h. Keep the includes
// minimal (uniform_isa.h says why).
#include "runtime/cpu/lut_avx512_ops.h"
#include "runtime/cpu/lut_simd_loops.h"

namespace fsq::cpu {

void lut_gemv_rows_avx512(const LutGemvBatch& b, int64_t row0, int64_t row1) { gemv_rows_simd<Avx512>(b, row0, row1); }

void lut_dequantize_rows_avx512(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  dequantize_rows_simd<Avx512>(w, row0, nrows, out);
}

}  // namespace fsq::cpu
