// A 16-lane AVX-512 vector as two 8-float halves: two blocks of the NCHW8c layout (two output
// blocks of a pixel, or two pixels of a block) that lie apart in memory. AVX-512F only, for files
// built with it (ukernels/*__avx512.cc).
#pragma once

#include <immintrin.h>

#include <cstdint>

// GCC 12's insert, extract, cast, min and max intrinsics start from _mm512_undefined_ps(), which
// its -W(maybe-)uninitialized reports wherever they inline; every lane is written. (For the rest
// of the including file.)
#if !defined(__clang__)  // GCC's warning; clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace lumen::ukernels {

// Floats [p, p + 8) in the low half and [p + stride, p + stride + 8) in the high half.
inline __m512 load_halves(const float *p, int64_t stride) {
  const __m512d lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(p)));
  return _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_loadu_ps(p + stride)), 1));
}
inline void store_halves(float *p, int64_t stride, __m512 v) {
  _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
  _mm256_storeu_ps(p + stride, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
// Floats [p, p + 8) in both halves.
inline __m512 both_halves(const float *p) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(p))));
}

}  // namespace lumen::ukernels
