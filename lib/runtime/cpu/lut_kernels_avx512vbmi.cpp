// AVX-512 VBMI variant of the LUT kernels: as lut_kernels_avx512.cpp, but a 3-bit block
// unpacks each vector of 16 codes with one vpmultishiftqb instead of vpshufb + vpsrlvd.
// Compiled with the AVX-512 flags plus -mavx512vbmi (lib/runtime/CMakeLists.txt); called
// only when the CPU has VBMI (lut_gemv.cpp). Bit-identical to the AVX-512 variant: the
// same weights in the same lanes, multiplied and summed in the same order.
#include "runtime/cpu/lut_avx512_ops.h"
#include "runtime/cpu/lut_simd_loops.h"

namespace fsq::cpu {
namespace {

struct Avx512Vbmi : Avx512 {
  // 16 codes = 48 bits from byte offset 6s: every qword of the vector gets the 8 bytes from
  // there, and qword i's bytes 0 and 4 select bits 6i and 6i + 3 of it, so dword lane j's
  // low byte starts at code j. vpermps reads the low 4 bits: bit 3 is the next code's, which
  // the 3-bit table (its 8 centroids twice over) ignores.
  template <int B>
  static void block(const uint8_t* p, const Table& t, Vec* w) {
    if constexpr (B == 4) {
      Avx512::block<4>(p, t, w);
    } else {
      const __m512i select = _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45);
      for (int s = 0; s < 8; ++s) {  // reads bytes 6s .. 6s + 7: 2 past the block's 48
        const __m512i bits = _mm512_set1_epi64(static_cast<long long>(load_bytes(p + 6 * s, 8)));
        w[s] = _mm512_permutexvar_ps(_mm512_multishift_epi64_epi8(select, bits), t);
      }
    }
  }
};

}  // namespace

void lut_gemv_rows_avx512vbmi(const LutGemvBatch& b, int64_t row0, int64_t row1) {
  gemv_rows_simd<Avx512Vbmi>(b, row0, row1);
}

}  // namespace fsq::cpu
