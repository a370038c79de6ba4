// The GEMM micro-kernels compiled into Lumen and the choice among them by CPU features.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace lumen::cpu {

struct F32GemmMicrokernel {
  std::string_view name;  // "f32_gemm_12x32__avx512"
  int mr, nr;             // tile rows and columns
  void (*run)(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m, int n,
              bool accumulate);
  bool (*supported)();  // does this CPU have the instruction set?
};

// Every compiled micro-kernel, fastest first (supported or not).
std::span<const F32GemmMicrokernel> f32_gemm_microkernels();

// The fastest one this CPU supports, chosen once. LUMEN_CPU_ISA=avx2|portable caps the choice
// (to test or compare the slower paths on a machine that has AVX-512).
const F32GemmMicrokernel &default_f32_gemm_microkernel();

}  // namespace lumen::cpu
