// 3-bit codes spread to bytes with AVX-512 VBMI, shared by the q8 kernels that read them
// (LUT and uniform, whose 3-bit codes are packed alike: packed_code.h). Internal linkage and
// intrinsics: include only from files compiled with -mavx512vbmi (uniform_isa.h says why).
//
// 64 columns in order are 24 code bytes: vpermb gives qword j the 3 bytes of codes 8j .. 8j + 7,
// vpmultishiftqb moves code 8j + k to byte k of it (bits 3k .. 3k + 7).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace fsq::cpu {
namespace {

constexpr int64_t kCodes3ChunkCols = 64;

// Byte k of the result holds code k of the 64 codes at p in its low 3 bits (the bits above
// are the next codes': mask them). bytes: the code bytes of the chunk (24, fewer at a row's
// end); avail: the bytes readable from p.
__attribute__((always_inline)) inline __m512i spread_codes3(const uint8_t* p, int64_t bytes, int64_t avail) {
  // Qword j: bytes 3j, 3j + 1, 3j + 2 (and 3j + 2 again, unused) in its low dword.
  const __m512i spread = _mm512_set_epi64(0x17171615, 0x14141312, 0x1111100f, 0x0e0e0d0c, 0x0b0b0a09, 0x08080706,
                                          0x05050403, 0x02020100);
  const __m512i select = _mm512_set1_epi64(0x15120f0c09060300);
  // 32 bytes for the chunk's 24 where the matrix goes on that far (the 8 more are not
  // selected by spread; a tail chunk's bytes past its row meet activation codes 0), else a
  // masked load of just the chunk's bytes: on Zen 5 a masked load that straddles two cache
  // lines cost the 3-bit GEMV two thirds of its rate at 11008 columns.
  const __m512i codes = avail >= 32 ? _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))
                                    : _mm512_maskz_loadu_epi8(~uint64_t{0} >> (64 - bytes), p);
  return _mm512_multishift_epi64_epi8(select, _mm512_permutexvar_epi8(spread, codes));
}

}  // namespace
}  // namespace fsq::cpu
