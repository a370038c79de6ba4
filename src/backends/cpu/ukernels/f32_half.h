// float16 <-> float32 conversion with the F16C instructions (every AVX2 CPU has them): eight
// values per instruction, rounding to nearest even as the scalar conversion does.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "core/cpu_isa.h"

namespace lumen::ukernels {

// Whether this CPU runs the kernels below (built on x86-64 with GCC or Clang only; an AVX2 CPU
// without F16C is not known, but is checked for).
inline bool f16c_runs() {
#if defined(__x86_64__) && defined(__GNUC__)
  // CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c").
  static const bool runs = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return vec::cpu_isa() >= vec::Isa::Avx2 && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
  }();
  return runs;
#else
  return false;
#endif
}

void f16_to_f32__avx2(const uint16_t *x, float *y, int64_t n);
void f32_to_f16__avx2(const float *x, uint16_t *y, int64_t n);

}  // namespace lumen::ukernels
