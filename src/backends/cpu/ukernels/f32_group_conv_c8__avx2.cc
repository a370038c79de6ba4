// The grouped conv rows of f32_group_conv.h for AVX2: one vector of 8 output channels per output
// position, up to 12 positions in registers, so each weight vector loaded serves 12 multiply-adds
// and each broadcast input value one (13 loads per 12 FMAs, where a 6x16 GEMM tile with 8 rows
// of A ran its 2-row edge tile at half speed). A row's outputs are collected lane-minor, clamped
// and transposed 8x8 into the channels' planes.
#include "backends/cpu/ukernels/f32_group_conv.h"

// Built with this ISA's flags on x86-64 only; elsewhere the caller never runs it (CPU check).
#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/ukernels/avx2_vectors.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = 8;

// kOutputs consecutive outputs of one row, `in` at the first one's window: for each of the taps
// (input channel, kernel row, kernel column), one weight vector and the tap's input at offsets[t].
// kStride is the column stride when known at compile time (0: stride), so that the broadcasts'
// offsets are displacements rather than an addition each. One flat loop over the taps keeps the
// accumulators in registers (nested loops over c, a, b spilled them).
template <int kOutputs, int kStride>
inline void outputs(const float *in, const int64_t *offsets, int64_t taps, int64_t stride,
                    const float *weights, __m256 bias, float *out) {
  const int64_t step = kStride > 0 ? kStride : stride;
  __m256 acc[kOutputs];
  for (int u = 0; u < kOutputs; ++u) acc[u] = bias;
  for (int64_t t = 0; t < taps; ++t) {
    const __m256 k = _mm256_loadu_ps(weights + t * kLanes);
    const float *src = in + offsets[t];
    for (int u = 0; u < kOutputs; ++u)
      acc[u] = _mm256_fmadd_ps(_mm256_broadcast_ss(src + u * step), k, acc[u]);
  }
  for (int u = 0; u < kOutputs; ++u) _mm256_store_ps(out + u * kLanes, acc[u]);
}

// The 12-output case with named accumulators: as an array of 12 vectors, GCC kept a copy of the
// array on the stack and stored every accumulator to it on every tap.
template <int kStride>
inline void outputs12(const float *in, const int64_t *offsets, int64_t taps, int64_t stride,
                      const float *weights, __m256 bias, float *out) {
  const int64_t step = kStride > 0 ? kStride : stride;
  __m256 a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias, a7 = bias,
         a8 = bias, a9 = bias, a10 = bias, a11 = bias;
  for (int64_t t = 0; t < taps; ++t) {
    const __m256 k = _mm256_loadu_ps(weights + t * kLanes);
    const float *src = in + offsets[t];
    a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(src), k, a0);
    a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + step), k, a1);
    a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 2 * step), k, a2);
    a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 3 * step), k, a3);
    a4 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 4 * step), k, a4);
    a5 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 5 * step), k, a5);
    a6 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 6 * step), k, a6);
    a7 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 7 * step), k, a7);
    a8 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 8 * step), k, a8);
    a9 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 9 * step), k, a9);
    a10 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 10 * step), k, a10);
    a11 = _mm256_fmadd_ps(_mm256_broadcast_ss(src + 11 * step), k, a11);
  }
  _mm256_store_ps(out, a0), _mm256_store_ps(out + 8, a1), _mm256_store_ps(out + 16, a2);
  _mm256_store_ps(out + 24, a3), _mm256_store_ps(out + 32, a4), _mm256_store_ps(out + 40, a5);
  _mm256_store_ps(out + 48, a6), _mm256_store_ps(out + 56, a7), _mm256_store_ps(out + 64, a8);
  _mm256_store_ps(out + 72, a9), _mm256_store_ps(out + 80, a10), _mm256_store_ps(out + 88, a11);
}

// One output row into o ([ow][8]), 12, 8, 4, 2 or 1 outputs at a time.
template <int kStride>
void output_row(const GroupConvRows &d, const float *in, const int64_t *offsets, int64_t taps,
                __m256 bias, float *o) {
  const int64_t sw = d.sw, ow = d.ow;
  const float *w = d.weights;
  int64_t j = 0;
  for (; j + 12 <= ow; j += 12)
    outputs12<kStride>(in + j * sw, offsets, taps, sw, w, bias, o + j * kLanes);
  if (j + 8 <= ow)
    outputs<8, kStride>(in + j * sw, offsets, taps, sw, w, bias, o + j * kLanes), j += 8;
  if (j + 4 <= ow)
    outputs<4, kStride>(in + j * sw, offsets, taps, sw, w, bias, o + j * kLanes), j += 4;
  if (j + 2 <= ow)
    outputs<2, kStride>(in + j * sw, offsets, taps, sw, w, bias, o + j * kLanes), j += 2;
  if (j < ow) outputs<1, kStride>(in + j * sw, offsets, taps, sw, w, bias, o + j * kLanes);
}

}  // namespace

void f32_group_conv_c8__avx2(const GroupConvRows &d) {
  const __m256 bias = d.bias ? _mm256_loadu_ps(d.bias) : _mm256_setzero_ps();
  const __m256 lo = _mm256_set1_ps(d.lo), hi = _mm256_set1_ps(d.hi);
  const auto row = d.sw == 1 ? output_row<1> : d.sw == 2 ? output_row<2> : output_row<0>;
  // Each tap's input offset from an output's window.
  const int64_t taps = d.cg * d.kh * d.kw;
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(taps));
  for (int64_t c = 0; c < d.cg; ++c)
    for (int64_t a = 0; a < d.kh; ++a)
      for (int64_t b = 0; b < d.kw; ++b)
        offsets.push_back(c * d.channel_stride + a * d.dh * d.wp + b * d.dw);
  float *o = d.scratch;  // [ow + 8][8]: one output row, lane-minor
  for (int64_t i = 0; i < d.oh; ++i) {
    row(d, d.x + i * d.sh * d.wp, offsets.data(), taps, bias, o);
    store_lanes_to_planes(o, d.ow, d.y + i * d.ow, d.out_plane, kLanes, lo, hi);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
