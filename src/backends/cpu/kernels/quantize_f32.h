// Float32 quantization to 8/16-bit integers in a vectorizable loop, shared by QuantizeLinear and
// DynamicQuantizeLinear (cpu/kernels/quantize.cc, integer_gemm.cc).
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace lumen::cpu {

// Rounds half to even (the default rounding mode) for |v| <= 2^22: adding and subtracting 1.5 *
// 2^23 leaves no fraction bits. Unlike std::nearbyint, GCC vectorizes it.
constexpr float kBig = 4194304.0f;  // 2^22; the outputs saturate long before
LUMEN_VEC_INLINE inline float round_even(float v) {
  return (v + 12582912.0f) - 12582912.0f;
}

// y = saturate(round_half_even(x / s) + z) into [lo, hi], NaN to 0, all in float: exact for a
// float32 x and scale (the quotient is the reference's float quotient, its rounding exact, and an
// integer zero point of at most 16 bits adds exactly wherever the result does not saturate). Call
// inside vec::run_best. Straight-line selects on restrict parameters: stores through an 8-bit
// pointer may alias anything, and with the values in a closure GCC reloaded them per element and
// left the loop scalar (17x slower).
template <class T, class Q>
LUMEN_VEC_INLINE inline void quantize_f32(const T *__restrict x, Q *__restrict y, int64_t n,
                                          float s, float z, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float q = float(x[i]) / s;
    q = q < -kBig ? -kBig : q;
    q = q > kBig ? kBig : q;
    float v = round_even(q) + z;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    v = v == v ? v : 0.0f;
    y[i] = Q(int32_t(v));
  }
}

}  // namespace lumen::cpu
