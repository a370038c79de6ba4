// Run-time ISA dispatch for plain C++ loops. The library is built for baseline x86-64 (or any
// other target); hot loops are written as ordinary scalar code that GCC/Clang auto-vectorize, and
// run_best() compiles such a loop a second and third time for AVX2+FMA and AVX-512 and picks the
// widest one the CPU supports.
//
//   vec::run_best([&]() LUMEN_VEC_INLINE { for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]); });
//
// The body must be inlined into the target-specific wrapper (LUMEN_VEC_INLINE), so it is compiled
// (and vectorized) for that wrapper's ISA; functions it calls should be inline too. Results may
// differ in the last bits between ISAs (FMA contraction), never more.
#pragma once

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define LUMEN_VEC_X86 1
#define LUMEN_TARGET_AVX2 __attribute__((target("avx2,fma,bmi,bmi2,f16c,popcnt")))
#define LUMEN_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,bmi,bmi2,f16c,popcnt")))
#else
#define LUMEN_VEC_X86 0
#define LUMEN_TARGET_AVX2
#define LUMEN_TARGET_AVX512
#endif

#if defined(__GNUC__)
#define LUMEN_VEC_INLINE __attribute__((always_inline))
#else
#define LUMEN_VEC_INLINE
#endif

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace lumen::vec {

enum class Isa { Baseline, Avx2, Avx512 };

// The widest ISA this CPU (and OS) supports, detected once.
inline Isa hardware_isa() {
#if LUMEN_VEC_X86
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
      return Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
    return Isa::Baseline;
  }();
  return isa;
#else
  return Isa::Baseline;
#endif
}

// The ISA kernels use: the hardware's, capped by LUMEN_CPU_ISA=avx2|baseline when set (to test or
// compare the narrower paths on a wider machine).
inline Isa cpu_isa() {
  static const Isa isa = [] {
    const char *cap = std::getenv("LUMEN_CPU_ISA");
    const std::string_view limit = cap ? cap : "";
    const Isa most = limit == "baseline" ? Isa::Baseline
                     : limit == "avx2"   ? Isa::Avx2
                                         : Isa::Avx512;
    return std::min(hardware_isa(), most);
  }();
  return isa;
}

#if LUMEN_VEC_X86
template <class Body>
LUMEN_TARGET_AVX512 void run_avx512(Body &body) {
  body();
}
template <class Body>
LUMEN_TARGET_AVX2 void run_avx2(Body &body) {
  body();
}
#endif

// Calls body() compiled for the best ISA available.
template <class Body>
void run_best(Body &&body) {
#if LUMEN_VEC_X86
  switch (cpu_isa()) {
    case Isa::Avx512:
      return run_avx512(body);
    case Isa::Avx2:
      return run_avx2(body);
    case Isa::Baseline:
      break;
  }
#endif
  body();
}

}  // namespace lumen::vec
