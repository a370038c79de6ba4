// Packing a row-major A block into the AVX2 micro-kernel's panel layout is a transpose: panel step
// p holds column p of `rows` rows. Eight steps at a time: eight loads, an 8x8 transpose in
// registers and eight overlapping stores, instead of `rows` scalar copies per step (a MatMul whose
// A is an activation packs all of it for every column block).
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_6x16__avx2.cc.
#if defined(__AVX2__)
#include <immintrin.h>

namespace lumen::ukernels {
namespace {

// In place: rows r[0..8) become columns.
inline void transpose8x8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

}  // namespace

void f32_pack_rows__avx2(const float *src, int64_t ld, int rows, int64_t kc, int width,
                         float *dst) {
  int64_t p = 0;
  // A step's 8-lane store runs width <= 8 lanes into the next step, which overwrites them: the
  // last step of the block is stored by the scalar loop, so nothing past dst is written.
  for (; p + 8 < kc; p += 8, dst += 8 * width) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i)
      r[i] = i < rows ? _mm256_loadu_ps(src + i * ld + p) : _mm256_setzero_ps();
    transpose8x8(r);
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * width, r[i]);
  }
  for (; p < kc; ++p, dst += width)
    for (int i = 0; i < width; ++i) dst[i] = i < rows ? src[i * ld + p] : 0.0f;
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
