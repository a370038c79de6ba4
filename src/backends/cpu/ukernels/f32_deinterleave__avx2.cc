// Even and odd elements of a row into two rows (the stride-2 depthwise conv's parity planes).
#if defined(__AVX2__)
#include <immintrin.h>

#include "backends/cpu/ukernels/f32_depthwise.h"

namespace lumen::ukernels {

void f32_deinterleave__avx2(const float *src, int64_t n, float *evens, float *odds) {
  int64_t i = 0;  // pairs done
  for (; 2 * i + 16 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(src + 2 * i), b = _mm256_loadu_ps(src + 2 * i + 8);
    // Per 128-bit lane [a0 a2 b0 b2 | a4 a6 b4 b6]; then 64-bit pairs in the order 0, 2, 1, 3.
    const __m256d e = _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    const __m256d o = _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm256_storeu_ps(evens + i, _mm256_castpd_ps(_mm256_permute4x64_pd(e, 0xD8)));
    _mm256_storeu_ps(odds + i, _mm256_castpd_ps(_mm256_permute4x64_pd(o, 0xD8)));
  }
  for (; 2 * i < n; ++i) {
    evens[i] = src[2 * i];
    if (2 * i + 1 < n) odds[i] = src[2 * i + 1];
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
