// float16 <-> float32 by F16C (f32_half.h).
#include "backends/cpu/ukernels/f32_half.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>

namespace lumen::ukernels {

void f16_to_f32__avx2(const uint16_t *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x + i))));
  if (i == n) return;
  alignas(16) uint16_t in[8] = {};
  alignas(32) float out[8];
  std::copy(x + i, x + n, in);
  _mm256_store_ps(out, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i *>(in))));
  std::copy(out, out + (n - i), y + i);
}

void f32_to_f16__avx2(const float *x, uint16_t *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  if (i == n) return;
  alignas(32) float in[8] = {};
  alignas(16) uint16_t out[8];
  std::copy(x + i, x + n, in);
  _mm_store_si128(reinterpret_cast<__m128i *>(out),
                  _mm256_cvtps_ph(_mm256_load_ps(in), _MM_FROUND_TO_NEAREST_INT));
  std::copy(out, out + (n - i), y + i);
}

}  // namespace lumen::ukernels

#endif  // __AVX2__ && __F16C__
