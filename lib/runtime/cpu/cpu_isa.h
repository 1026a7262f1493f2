// The instruction sets the CPU kernels are compiled for, shared by every kernel family
// (README.md: which family has which variant). Each SIMD variant lives in its own .cpp file
// compiled for its ISA; the dispatchers pick one at run time from these.
#pragma once

#include <string_view>

namespace fsq::cpu {

// Instruction sets the kernels are compiled for; each variant is chosen at run time.
// Avx2 means AVX2 + FMA + F16C; Avx512 means AVX-512 F/BW/VL (+ FMA, F16C). The extensions
// some kernels also need (AVX-512 VNNI, VBMI) are checked by their families' own *_isa.h.
enum class CpuIsa { Scalar, Avx2, Avx512 };
const char* cpu_isa_name(CpuIsa isa);  // "scalar", "avx2", "avx512"
bool cpu_supports(CpuIsa isa);
CpuIsa best_cpu_isa();  // the widest instruction set this CPU supports
// best_cpu_isa(), unless the environment variable FSQ_CPU_ISA (scalar | avx2 | avx512) asks
// for another one (tests, benchmarks). Throws fsq::Error when FSQ_CPU_ISA names an unknown
// ISA or one this CPU lacks: a silently ignored override would make a benchmark lie.
CpuIsa selected_cpu_isa();
// "scalar" / "avx2" / "avx512" -> isa; false for anything else.
bool parse_cpu_isa(std::string_view name, CpuIsa* isa);

// The AVX-512 extensions some variants of CpuIsa::Avx512 also need (false without AVX-512):
// VNNI (vpdpbusd: the int8 kernels, the q8 GEMVs and GEMMs) and VBMI (the byte permutes of
// the 3-bit q8 kernels and the LUT GEMV's 3-bit unpacking).
bool cpu_has_avx512_vnni();
bool cpu_has_avx512_vbmi();

}  // namespace fsq::cpu
