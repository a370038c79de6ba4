// Packing a row-major A block into the micro-kernel's panel layout is a transpose: panel step p
// holds column p of `rows` rows. Sixteen steps at a time: `rows` loads, a 16x16 transpose in
// registers and sixteen masked stores. It replaced one gather per step, 1.7x the time on a Xeon
// whose gathers carry the GDS mitigation (12 x 768 blocks: 0.19 -> 0.11 ns per value); a
// 128-token BERT-base spent 4% of its time packing A (every MatMul's A is an activation).
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_12x32__avx512.cc.
#if defined(__AVX512F__)
#include <immintrin.h>

namespace lumen::ukernels {
namespace {

// The zero-masked forms of the shuffles, all lanes kept: GCC's plain ones pass an undefined
// vector as their masked-off source, which -Wmaybe-uninitialized reports.
constexpr __mmask16 kAll = 0xFFFF;

// r[i] holds row i of a 16x16 block; afterwards r[c] holds its column c.
inline void transpose16x16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // pairs of rows interleaved
    t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // 4x4 blocks within each 128-bit lane
    r[i] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {  // then the 128-bit lanes across rows 4 and 8 apart
    t[i] = _mm512_maskz_shuffle_f32x4(kAll, r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_maskz_shuffle_f32x4(kAll, r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_maskz_shuffle_f32x4(kAll, r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_maskz_shuffle_f32x4(kAll, r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_maskz_shuffle_f32x4(kAll, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_maskz_shuffle_f32x4(kAll, t[i], t[i + 8], 0xDD);
    r[i + 4] = _mm512_maskz_shuffle_f32x4(kAll, t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_maskz_shuffle_f32x4(kAll, t[i + 4], t[i + 12], 0xDD);
  }
}

}  // namespace

void f32_pack_rows__avx512(const float *src, int64_t ld, int rows, int64_t kc, int width,
                           float *dst, int64_t dst_ld) {
  const __mmask16 stored = static_cast<__mmask16>((1u << width) - 1);
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16, dst += 16 * dst_ld) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      r[i] = i < rows ? _mm512_loadu_ps(src + i * ld + p) : _mm512_setzero_ps();
    transpose16x16(r);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_mask_storeu_ps(dst + i * dst_ld, stored, r[i]);
  }
  for (; p < kc; ++p, dst += dst_ld)
    for (int i = 0; i < width; ++i) dst[i] = i < rows ? src[i * ld + p] : 0.0f;
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
