// The channels-in-lanes 3x3 depthwise conv (f32_depthwise.h) for AVX2: 8 channels per vector, 8x8
// transposes in and out. No masked stores (microcoded on AMD): an output row tail shorter than 8
// positions goes through a buffer.
#include "backends/cpu/ukernels/f32_depthwise.h"

// Built with this ISA's flags on x86-64 only; elsewhere the caller never runs it (CPU check).
#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/ukernels/avx2_vectors.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = 8;

}  // namespace

void f32_depthwise3x3_c8__avx2(const DepthwiseChannels &d, float *scratch) {
  const int64_t s = d.stride, cols = (d.ow - 1) * s + 3;
  const int64_t in_plane = d.h * d.w, out_plane = d.oh * d.ow;
  const int64_t strip = f32_depthwise3x3_strip(d, kLanes);
  const __m256 zero = _mm256_setzero_ps();

  __m256 wv[9];
  alignas(32) float lanes_of[9][kLanes] = {};
  for (int l = 0; l < d.channels; ++l)
    for (int k = 0; k < 9; ++k) lanes_of[k][l] = d.weights[l * 9 + k];
  for (int k = 0; k < 9; ++k) wv[k] = _mm256_load_ps(lanes_of[k]);
  const __m256 bias = d.bias ? _mm256_maskload_ps(d.bias, first_lanes8(d.channels)) : zero;

  float *t = scratch;  // [rows][cols][8]: padded input rows of the strip, channel-minor
  for (int64_t i0 = 0; i0 < d.oh; i0 += strip) {
    const int64_t i1 = std::min(d.oh, i0 + strip);
    const int64_t r0 = i0 * s, rows = (i1 - 1 - i0) * s + 3;
    float *o = t + rows * cols * kLanes;  // [(i1 - i0) * ow][8]
    // Transpose the strip's input rows in: 8 columns of 8 channels at a time.
    for (int64_t r = 0; r < rows; ++r) {
      float *trow = t + r * cols * kLanes;
      const int64_t ir = r0 + r - d.pt;
      if (ir < 0 || ir >= d.h) {
        for (int64_t c = 0; c < cols; ++c) _mm256_store_ps(trow + c * kLanes, zero);
        continue;
      }
      const int64_t c0 = std::min(cols, d.pl), c1 = std::min(cols, d.pl + d.w);
      for (int64_t c = 0; c < c0; ++c) _mm256_store_ps(trow + c * kLanes, zero);
      for (int64_t c = c1; c < cols; ++c) _mm256_store_ps(trow + c * kLanes, zero);
      const float *xrow = d.x + ir * d.w;
      for (int64_t ic = 0; ic < c1 - c0; ic += kLanes) {
        const bool full = c1 - c0 - ic >= kLanes;
        const __m256i m = first_lanes8(c1 - c0 - ic);
        __m256 v[8];
        for (int l = 0; l < kLanes; ++l) {
          const float *src = xrow + l * in_plane + ic;
          v[l] = l >= d.channels ? zero : full ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m);
        }
        transpose8x8(v);
        const int64_t n = std::min<int64_t>(kLanes, c1 - c0 - ic);
        for (int64_t k = 0; k < n; ++k) _mm256_store_ps(trow + (c0 + ic + k) * kLanes, v[k]);
      }
    }
    // Nine taps per output, all 8 lanes useful.
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = 0; j < d.ow; ++j) {
        const float *base = t + ((i - i0) * s * cols + j * s) * kLanes;
        __m256 acc = bias;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            acc =
                _mm256_fmadd_ps(wv[a * 3 + b], _mm256_load_ps(base + (a * cols + b) * kLanes), acc);
        _mm256_store_ps(o + ((i - i0) * d.ow + j) * kLanes, acc);
      }
    }
    // Transpose the outputs back into planes, 8 positions at a time.
    const int64_t q0 = i0 * d.ow, count = (i1 - i0) * d.ow;
    for (int64_t q = 0; q < count; q += kLanes) {
      __m256 v[8];
      for (int k = 0; k < kLanes; ++k)
        v[k] = _mm256_load_ps(o + (q + k) * kLanes);  // past count: junk
      transpose8x8(v);
      const int64_t n = std::min<int64_t>(kLanes, count - q);
      for (int l = 0; l < d.channels; ++l) {
        float *dst = d.y + l * out_plane + q0 + q;
        if (n == kLanes) {
          _mm256_storeu_ps(dst, v[l]);
        } else {
          alignas(32) float tail[kLanes];
          _mm256_store_ps(tail, v[l]);
          std::copy(tail, tail + n, dst);
        }
      }
    }
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
