// 12 x 32 tile: 24 zmm accumulators, two B vectors and one broadcast A value per step, so the
// two FMA ports stay busy while loads stay under two per cycle.

#include "backends/cpu/ukernels/f32_gemm.h"

// Built with this ISA's flags on x86-64 only; elsewhere the file is empty and the table in
// gemm/microkernel.cc never offers the kernel (its CPU check fails).
#if defined(__AVX512F__)
#include <immintrin.h>

namespace lumen::ukernels {

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate) {
  constexpr int kMr = 12;
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p, a += kMr, b += 32) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const auto lanes = [](int count) -> __mmask16 {
    return count >= 16  ? __mmask16(0xFFFF)
           : count <= 0 ? __mmask16(0)
                        : __mmask16((1u << count) - 1);
  };
  const __mmask16 m0 = lanes(n), m1 = lanes(n - 16);
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    if (r >= m) break;
    float *cr = c + r * ldc;
    __m512 v0 = acc[r][0], v1 = acc[r][1];
    if (accumulate) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
