#include "backends/cpu/ukernels/f32_depthwise.h"

// Built with this ISA's flags on x86-64 only; elsewhere the caller never runs it (CPU check).
#if defined(__AVX512F__)
#include <immintrin.h>

#include <algorithm>

namespace lumen::ukernels {

void f32_depthwise3x3_c16__avx512(const DepthwiseChannels &d, float *scratch) {
  const int64_t s = d.stride;
  const int64_t rows = (d.oh - 1) * s + 3, cols = (d.ow - 1) * s + 3;
  const int64_t in_plane = d.h * d.w, out_plane = d.oh * d.ow;
  const __mmask16 channels =
      d.channels >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << d.channels) - 1);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 zero = _mm512_setzero_ps();

  // Input, transposed and padded: t[r][c][lane] = x[lane][r - pt][c - pl], or 0 outside.
  float *t = scratch;
  const __m512i in_index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int>(in_plane)));
  for (int64_t r = 0; r < rows; ++r) {
    float *trow = t + r * cols * 16;
    const int64_t ir = r - d.pt;
    const int64_t c0 = ir < 0 || ir >= d.h ? cols : std::min(cols, std::max<int64_t>(0, d.pl));
    const int64_t c1 = ir < 0 || ir >= d.h ? cols : std::min(cols, std::max(c0, d.pl + d.w));
    for (int64_t c = 0; c < c0; ++c) _mm512_store_ps(trow + c * 16, zero);
    const float *xrow = d.x + ir * d.w - d.pl;
    for (int64_t c = c0; c < c1; ++c)
      _mm512_store_ps(trow + c * 16,
                      _mm512_mask_i32gather_ps(zero, channels, in_index, xrow + c, 4));
    for (int64_t c = c1; c < cols; ++c) _mm512_store_ps(trow + c * 16, zero);
  }

  // Outputs, one vector of channels per position: o[q][lane].
  __m512 wv[9];
  const __m512i w_index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(9));
  for (int k = 0; k < 9; ++k)
    wv[k] = _mm512_mask_i32gather_ps(zero, channels, w_index, d.weights + k, 4);
  const __m512 bias = d.bias ? _mm512_maskz_loadu_ps(channels, d.bias) : zero;
  float *o = t + rows * cols * 16;
  for (int64_t i = 0; i < d.oh; ++i) {
    for (int64_t j = 0; j < d.ow; ++j) {
      const float *base = t + (i * s * cols + j * s) * 16;
      __m512 acc = bias;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          acc = _mm512_fmadd_ps(wv[a * 3 + b], _mm512_load_ps(base + (a * cols + b) * 16), acc);
      _mm512_store_ps(o + (i * d.ow + j) * 16, acc);
    }
  }

  // Back into planes: y[lane][q] = o[q][lane], 16 positions per gather.
  const __m512i o_index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(16));
  for (int l = 0; l < d.channels; ++l) {
    float *yl = d.y + l * out_plane;
    for (int64_t q = 0; q < out_plane; q += 16) {
      const int64_t left = out_plane - q;
      const __mmask16 m = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
      _mm512_mask_storeu_ps(yl + q, m,
                            _mm512_mask_i32gather_ps(zero, m, o_index, o + q * 16 + l, 4));
    }
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
