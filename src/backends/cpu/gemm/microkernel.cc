#include "backends/cpu/gemm/microkernel.h"

#include <cstdlib>

#include "backends/cpu/ukernels/f32_gemm.h"

namespace lumen::cpu {
namespace {

bool always() {
  return true;
}

// The ISA kernels exist on x86-64 only (their files are built with that ISA's flags there).
constexpr F32GemmMicrokernel kMicrokernels[] = {
#if defined(__x86_64__) && defined(__GNUC__)
    {"f32_gemm_12x32__avx512", 12, 32, ukernels::f32_gemm_12x32__avx512,
     [] { return __builtin_cpu_supports("avx512f") != 0; }},
    {"f32_gemm_6x16__avx2", 6, 16, ukernels::f32_gemm_6x16__avx2,
     [] { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }},
#endif
    {"f32_gemm_4x8__portable", 4, 8, ukernels::f32_gemm_4x8__portable, always},
};

}  // namespace

std::span<const F32GemmMicrokernel> f32_gemm_microkernels() {
  return kMicrokernels;
}

const F32GemmMicrokernel &default_f32_gemm_microkernel() {
  static const F32GemmMicrokernel &chosen = [&]() -> const F32GemmMicrokernel & {
    const char *cap = std::getenv("LUMEN_CPU_ISA");
    const std::string_view limit = cap ? cap : "";
    bool allowed = limit.empty();
    for (const F32GemmMicrokernel &k : kMicrokernels) {
      allowed = allowed || k.name.ends_with(limit);
      if (allowed && k.supported()) return k;
    }
    return std::span(kMicrokernels).back();
  }();
  return chosen;
}

}  // namespace lumen::cpu
