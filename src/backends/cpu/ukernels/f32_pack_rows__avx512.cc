// Packing a row-major A block into the micro-kernel's panel layout is a transpose: panel step p
// holds column p of `rows` rows. One masked gather per step replaces `rows` scalar copies.
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_12x32__avx512.cc.
#if defined(__AVX512F__)
#include <immintrin.h>

namespace lumen::ukernels {

void f32_pack_rows__avx512(const float *src, int64_t ld, int rows, int64_t kc, int width,
                           float *dst) {
  const __m512i index =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(ld)));
  const __mmask16 valid = static_cast<__mmask16>((1u << rows) - 1);
  const __mmask16 stored = static_cast<__mmask16>((1u << width) - 1);
  for (int64_t p = 0; p < kc; ++p, dst += width) {
    const __m512 column = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, index, src + p, 4);
    _mm512_mask_storeu_ps(dst, stored, column);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
