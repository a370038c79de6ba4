#include "backends/cpu/gemm/microkernel.h"

#include "backends/cpu/ukernels/f32_gemm.h"

namespace lumen::cpu {
namespace {

// The ISA kernels exist on x86-64 only (their files are built with that ISA's flags there).
constexpr F32GemmMicrokernel kMicrokernels[] = {
#if defined(__x86_64__) && defined(__GNUC__)
    {"f32_gemm_12x32__avx512", 12, 32, 16, ukernels::f32_gemm_12x32__avx512, vec::Isa::Avx512},
    {"f32_gemm_6x16__avx2", 6, 16, 8, ukernels::f32_gemm_6x16__avx2, vec::Isa::Avx2},
#endif
    {"f32_gemm_4x8__portable", 4, 8, 8, ukernels::f32_gemm_4x8__portable, vec::Isa::Baseline},
};

}  // namespace

std::span<const F32GemmMicrokernel> f32_gemm_microkernels() {
  return kMicrokernels;
}

const F32GemmMicrokernel &default_f32_gemm_microkernel() {
  static const F32GemmMicrokernel &chosen = [&]() -> const F32GemmMicrokernel & {
    for (const F32GemmMicrokernel &k : kMicrokernels)
      if (k.isa <= vec::cpu_isa()) return k;
    return std::span(kMicrokernels).back();
  }();
  return chosen;
}

}  // namespace lumen::cpu
