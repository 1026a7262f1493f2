// Which SIMD variant of the kernels this CPU can run, and the FSQ_CPU_ISA override.
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "runtime/cpu/cpu_isa.h"

namespace fsq::cpu {

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Scalar: return "scalar";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
  }
  return "unknown";
}

bool parse_cpu_isa(std::string_view name, CpuIsa* isa) {
  for (CpuIsa candidate : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (name == cpu_isa_name(candidate)) {
      *isa = candidate;
      return true;
    }
  }
  return false;
}

bool cpu_supports(CpuIsa isa) {
  // The flags each variant's translation unit is compiled with (lib/runtime/CMakeLists.txt).
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  switch (isa) {
    case CpuIsa::Scalar: return true;
    case CpuIsa::Avx2: return avx2;
    case CpuIsa::Avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
}

bool cpu_has_avx512_vnni() { return cpu_supports(CpuIsa::Avx512) && __builtin_cpu_supports("avx512vnni"); }

bool cpu_has_avx512_vbmi() {
  static const bool vbmi = cpu_supports(CpuIsa::Avx512) && __builtin_cpu_supports("avx512vbmi");
  return vbmi;
}

CpuIsa best_cpu_isa() {
  if (cpu_supports(CpuIsa::Avx512)) return CpuIsa::Avx512;
  if (cpu_supports(CpuIsa::Avx2)) return CpuIsa::Avx2;
  return CpuIsa::Scalar;
}

CpuIsa selected_cpu_isa() {
  const char* env = std::getenv("FSQ_CPU_ISA");
  if (env == nullptr || *env == '\0') return best_cpu_isa();
  CpuIsa isa{};
  if (!parse_cpu_isa(env, &isa))
    throw Error("FSQ_CPU_ISA=" + quote_name(env), "unknown instruction set; use scalar, avx2 or avx512");
  if (!cpu_supports(isa))
    throw Error("FSQ_CPU_ISA=" + std::string(env), "this CPU does not support it; the best it has is " +
                                                        std::string(cpu_isa_name(best_cpu_isa())));
  return isa;
}

}  // namespace fsq::cpu
