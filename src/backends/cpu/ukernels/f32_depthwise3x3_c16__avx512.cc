#include "backends/cpu/ukernels/f32_depthwise.h"

// Built with this ISA's flags on x86-64 only; elsewhere the caller never runs it (CPU check).
#if defined(__AVX512F__)
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/ukernels/avx512_lanes.h"

// GCC 12's unpack and shuffle intrinsics start from _mm512_undefined_ps(), which its
// -Wmaybe-uninitialized reports wherever they inline; every lane is written.
#if !defined(__clang__)  // GCC's warning; clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace lumen::ukernels {
namespace {

// In-register 16x16 transpose: r[i][j] becomes r[j][i].
inline void transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // b[4 i + k], 128-bit lane j: rows 4i..4i+3 of column 4j + k.
  for (int i = 0; i < 4; ++i) {
    const __m512d a0 = _mm512_castps_pd(a[4 * i]), a1 = _mm512_castps_pd(a[4 * i + 1]);
    const __m512d a2 = _mm512_castps_pd(a[4 * i + 2]), a3 = _mm512_castps_pd(a[4 * i + 3]);
    b[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
    b[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
    b[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
    b[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 c0 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0x88);
    const __m512 c1 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0xdd);
    const __m512 c2 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0x88);
    const __m512 c3 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0xdd);
    r[k] = _mm512_shuffle_f32x4(c0, c2, 0x88);
    r[4 + k] = _mm512_shuffle_f32x4(c1, c3, 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(c0, c2, 0xdd);
    r[12 + k] = _mm512_shuffle_f32x4(c1, c3, 0xdd);
  }
}

}  // namespace

void f32_depthwise3x3_c16__avx512(const DepthwiseChannels &d, float *scratch) {
  const int64_t s = d.sh, cols = d.padded_cols();
  const int64_t in_plane = d.h * d.w, out_plane = d.oh * d.ow;
  const int64_t strip = f32_depthwise_strip(d, 16);
  const __mmask16 channels = first_lanes(d.channels);
  const __m512 zero = _mm512_setzero_ps();

  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 wv[9];
  const __m512i w_index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(9));
  for (int k = 0; k < 9; ++k)
    wv[k] = _mm512_mask_i32gather_ps(zero, channels, w_index, d.weights + k, 4);
  const __m512 bias = d.bias ? _mm512_maskz_loadu_ps(channels, d.bias) : zero;

  float *t = scratch;  // [rows][cols][16]: padded input rows of the strip, channel-minor
  for (int64_t i0 = 0; i0 < d.oh; i0 += strip) {
    const int64_t i1 = std::min(d.oh, i0 + strip);
    const int64_t r0 = i0 * s, rows = (i1 - 1 - i0) * s + 3;
    float *o = t + rows * cols * 16;  // [(i1 - i0) * ow][16]
    // Transpose the strip's input rows in: 16 columns of 16 channels at a time.
    for (int64_t r = 0; r < rows; ++r) {
      float *trow = t + r * cols * 16;
      const int64_t ir = r0 + r - d.pt;
      if (ir < 0 || ir >= d.h) {
        for (int64_t c = 0; c < cols; ++c) _mm512_store_ps(trow + c * 16, zero);
        continue;
      }
      const int64_t c0 = std::min(cols, d.pl), c1 = std::min(cols, d.pl + d.w);
      for (int64_t c = 0; c < c0; ++c) _mm512_store_ps(trow + c * 16, zero);
      for (int64_t c = c1; c < cols; ++c) _mm512_store_ps(trow + c * 16, zero);
      const float *xrow = d.x + ir * d.w;
      for (int64_t ic = 0; ic < c1 - c0; ic += 16) {
        const __mmask16 m = first_lanes(c1 - c0 - ic);
        __m512 v[16];
        for (int l = 0; l < 16; ++l)
          v[l] = l < d.channels ? _mm512_maskz_loadu_ps(m, xrow + l * in_plane + ic) : zero;
        transpose16(v);
        const int64_t n = std::min<int64_t>(16, c1 - c0 - ic);
        for (int64_t k = 0; k < n; ++k) _mm512_store_ps(trow + (c0 + ic + k) * 16, v[k]);
      }
    }
    // Nine taps per output, all 16 lanes useful.
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = 0; j < d.ow; ++j) {
        const float *base = t + ((i - i0) * s * cols + j * s) * 16;
        __m512 acc = bias;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            acc = _mm512_fmadd_ps(wv[a * 3 + b], _mm512_load_ps(base + (a * cols + b) * 16), acc);
        _mm512_store_ps(o + ((i - i0) * d.ow + j) * 16, acc);
      }
    }
    // Transpose the outputs back into planes, 16 positions at a time.
    const int64_t q0 = i0 * d.ow, count = (i1 - i0) * d.ow;
    for (int64_t q = 0; q < count; q += 16) {
      __m512 v[16];
      for (int k = 0; k < 16; ++k) v[k] = _mm512_load_ps(o + (q + k) * 16);  // past count: junk
      transpose16(v);
      const __mmask16 m = first_lanes(count - q);
      for (int l = 0; l < d.channels; ++l)
        _mm512_mask_storeu_ps(d.y + l * out_plane + q0 + q, m, v[l]);
    }
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
