// The NCHW8c conv tiles (f32_nchwc.h) and the layout's reorders, AVX2. A tile is P pixels by F
// output blocks in 12 accumulators (F = 3, 2, 1 with P = 4, 6, 12): per tap and input channel, F
// weight vectors and P broadcasts of the input serve P * F multiply-adds. The input is read where
// it lies (the blocked layout needs no packing): a pixel's 8 channels are 32 contiguous bytes.
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/ukernels/avx2_vectors.h"
#include "backends/cpu/ukernels/l2_prefetch_share.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = kNchwcBlock;

// Plain: a plain NCHW input, one channel per tap (NchwcConvTile::in_blocks); a separate
// instantiation, so the blocked loop keeps its constant strides.
template <int F, int P, bool Plain>
inline void tile(const NchwcConvTile &p, const float *x, const int64_t *offsets, float *y,
                 const float *residual, L2PrefetchShare next) {
  int64_t at_pixel[P];  // pixel r reads x + at_pixel[r]
  for (int r = 0; r < P; ++r) at_pixel[r] = offsets ? offsets[r] : r * p.x_pixel_stride;
  __m256 acc[P][F];
  for (int f = 0; f < F; ++f) {
    const __m256 init = p.accumulate ? _mm256_setzero_ps()
                        : p.bias     ? _mm256_loadu_ps(p.bias + f * kLanes)
                                     : _mm256_setzero_ps();
    for (int r = 0; r < P; ++r)
      acc[r][f] = p.accumulate ? _mm256_load_ps(y + f * p.y_block_stride + r * kLanes) : init;
  }
  // Plain: one channel per tap. (Written as plain loops: with the channel as a lambda, GCC folded
  // the weight loads into the multiply-adds, loading each weight P times.)
  const int64_t blocks = Plain ? 1 : p.in_blocks;
  constexpr int kChannels = Plain ? 1 : kLanes;
  next.spread(p.taps * blocks);
  for (int64_t t = 0; t < p.taps; ++t) {
    const float *w = p.w + t * p.w_tap_stride;
    const float *xt = p.tap_offsets ? x + p.tap_offsets[t] : x;
    for (int64_t cb = 0; cb < blocks; ++cb) {
      next.step();
      // Each pixel's input where this block starts: the channels are small displacements.
      const float *xb = xt + cb * p.x_block_stride, *xq[P];
      for (int r = 0; r < P; ++r) xq[r] = xb + at_pixel[r];
      for (int c = 0; c < kChannels; ++c, w += F * kLanes) {
        __m256 wv[F];
        for (int f = 0; f < F; ++f) wv[f] = _mm256_load_ps(w + f * kLanes);
        for (int r = 0; r < P; ++r) {
          const __m256 xv = _mm256_broadcast_ss(xq[r] + c);
          for (int f = 0; f < F; ++f) acc[r][f] = _mm256_fmadd_ps(xv, wv[f], acc[r][f]);
        }
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  for (int f = 0; f < F; ++f)
    for (int r = 0; r < P; ++r) {
      __m256 v = acc[r][f];
      const int64_t at = f * p.y_block_stride + r * kLanes;
      if (p.last) {
        if (residual) v = _mm256_add_ps(v, _mm256_load_ps(residual + at));
        v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));  // max(lo, NaN) is NaN
      }
      _mm256_store_ps(y + at, v);
    }
}

// Whole tiles of P pixels, then the rest with smaller tiles: pixels [done, done + pixels) of the
// call's `all`.
template <int F, int P, bool Plain>
void run_pixels(const NchwcConvTile &p, int64_t pixels, int64_t done, int64_t all) {
  const float *x = p.x;
  const int64_t *offsets = p.pixel_offsets;
  float *y = p.y;
  const float *residual = p.last ? p.residual : nullptr;
  const auto tile_x = [&](int64_t at) { return offsets ? x : x + at * p.x_pixel_stride; };
  int64_t q = 0;
  for (; q + P <= pixels; q += P)
    tile<F, P, Plain>(p, tile_x(q), offsets ? offsets + q : nullptr, y + q * kLanes,
                      residual ? residual + q * kLanes : nullptr,
                      next_weights(p, done + q, P, all));
  if constexpr (P > 1) {
    if (q < pixels) {
      NchwcConvTile rest = p;
      rest.x = tile_x(q), rest.y = y + q * kLanes;
      rest.pixel_offsets = offsets ? offsets + q : nullptr;
      rest.residual = residual ? residual + q * kLanes : nullptr;
      run_pixels<F, P - 1, Plain>(rest, pixels - q, done + q, all);
    }
  }
}

template <bool Plain>
void run_filters(const NchwcConvTile &p, int64_t pixels) {
  switch (p.filters) {
    case 3:
      return run_pixels<3, 4, Plain>(p, pixels, 0, pixels);
    case 2:
      return run_pixels<2, 6, Plain>(p, pixels, 0, pixels);
    default:
      return run_pixels<1, 12, Plain>(p, pixels, 0, pixels);
  }
}

}  // namespace

void f32_nchwc_conv_tile__avx2(const NchwcConvTile &p, int64_t pixels) {
  if (p.in_blocks == 0) return run_filters<true>(p, pixels);
  run_filters<false>(p, pixels);
}

void f32_to_nchw8c__avx2(const float *x, int64_t plane, int64_t pixels, float *y) {
  int64_t q = 0;
  for (; q + kLanes <= pixels; q += kLanes) {
    __m256 v[8];
    for (int l = 0; l < kLanes; ++l) v[l] = _mm256_loadu_ps(x + l * plane + q);
    transpose8x8(v);
    for (int k = 0; k < kLanes; ++k) _mm256_store_ps(y + (q + k) * kLanes, v[k]);
  }
  for (; q < pixels; ++q)
    for (int l = 0; l < kLanes; ++l) y[q * kLanes + l] = x[l * plane + q];
}

void f32_from_nchw8c__avx2(const float *x, int64_t pixels, float *y, int64_t plane) {
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  // store_lanes_to_planes reads whole blocks of 8 positions: the last partial one from a copy.
  const int64_t whole = pixels / kLanes * kLanes;
  store_lanes_to_planes(x, whole, y, plane, kLanes, _mm256_sub_ps(_mm256_setzero_ps(), inf), inf);
  for (int64_t q = whole; q < pixels; ++q)
    for (int l = 0; l < kLanes; ++l) y[l * plane + q] = x[q * kLanes + l];
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
