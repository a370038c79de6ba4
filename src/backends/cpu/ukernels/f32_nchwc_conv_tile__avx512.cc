// The NCHW8c conv tiles (f32_nchwc.h), AVX-512. The layout keeps blocks of 8 channels (so every
// multiple of 8 stays blocked); one 16-lane vector holds two adjacent output blocks of one pixel,
// whose weights lie side by side in the packing ([k][F][8]). A tile is P pixels by F output blocks
// in F / 2 vectors of 16 lanes and, for an odd F, one of 8 (F = 8, 7 with P = 6; 6, 5 with P = 8;
// 4 to 1 with P = 12). Per input channel, one broadcast of the input serves the F blocks of a
// pixel, as in the AVX2 tile, at twice the width. P stays at most 12: each pixel's input address
// is a register (24-pixel tiles spilled them, 1.5x slower).
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX512F__)
#include "backends/cpu/ukernels/avx512_halves.h"
#include "backends/cpu/ukernels/l2_prefetch_share.h"
#include "core/cpu_isa.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = kNchwcBlock;
// Weights are prefetched this many floats (16 KiB) ahead of the channel being multiplied: in a
// model they come cold from memory once per run (ResNet-50's 2048 -> 512 convs read 4 MB for 49
// pixels), and a pass's first tile stalled on them. In-process A/B, 2 threads: ResNet-50 0.969x
// the time (1 thread 0.963x), Inception-v2 0.972x, MobileNetV2, DenseNet-121 and SqueezeNet
// within 0.7%; 8 or 32 KiB ahead the same as 16.
constexpr int64_t kWeightPrefetch = 4096;

// acc + x * w, in acc's register. With the intrinsic, GCC rotated the 24 accumulators of the 8 x 6
// tile through spare registers: 45 register copies per 192 multiply-adds (hot tile, 1 thread:
// 155-158 -> 164-166 GFLOP/s).
inline __m512 fma_in_place(__m512 x, __m512 w, __m512 acc) {
  asm("vfmadd231ps %[w], %[x], %[acc]" : [acc] "+v"(acc) : [x] "v"(x), [w] "v"(w));
  return acc;
}

// How a tile finds its pixels' input: a plain NCHW input, one channel per tap
// (NchwcConvTile::in_blocks); blocks at any offsets; or blocks of consecutive pixels, each
// displaced from the first by a constant, so that one register addresses all of them.
enum class Input { kPlain, kOffsets, kConsecutive };

template <int F, int P, Input In>
inline void tile(const NchwcConvTile &p, const float *x, const int64_t *offsets, float *y,
                 const float *residual, L2PrefetchShare next) {
  constexpr bool Plain = In == Input::kPlain;
  int64_t at_pixel[P];  // pixel r reads x + at_pixel[r]
  for (int r = 0; r < P; ++r)
    at_pixel[r] = In == Input::kConsecutive ? r * kLanes
                  : offsets                 ? offsets[r]
                                            : r * p.x_pixel_stride;
  constexpr int Z = F / 2;       // 16-lane accumulators per pixel
  constexpr bool H = F % 2;      // and one of 8 lanes, for the last block of an odd F
  constexpr int ZA = Z ? Z : 1;  // array extents must be positive
  const int64_t ys = p.y_block_stride;
  __m512 acc[P][ZA];
  __m256 half[P];
  for (int z = 0; z < Z; ++z) {
    const __m512 init =
        !p.accumulate && p.bias ? _mm512_loadu_ps(p.bias + z * 2 * kLanes) : _mm512_setzero_ps();
    for (int r = 0; r < P; ++r)
      acc[r][z] = p.accumulate ? load_halves(y + 2 * z * ys + r * kLanes, ys) : init;
  }
  if constexpr (H) {
    const __m256 init =
        !p.accumulate && p.bias ? _mm256_loadu_ps(p.bias + 2 * Z * kLanes) : _mm256_setzero_ps();
    for (int r = 0; r < P; ++r)
      half[r] = p.accumulate ? _mm256_load_ps(y + 2 * Z * ys + r * kLanes) : init;
  }
  // One input channel: its weights for the F blocks, times each pixel's value.
  const auto channel = [&](const float *const *xq, int c, const float *w) LUMEN_VEC_INLINE {
    __m512 wv[ZA];
    for (int z = 0; z < Z; ++z) wv[z] = _mm512_loadu_ps(w + z * 2 * kLanes);
    __m256 wh = _mm256_setzero_ps();
    if constexpr (H) wh = _mm256_loadu_ps(w + 2 * Z * kLanes);
    // An address, not a pointer into the weights: it may lie past their end (a prefetch never
    // faults).
    _mm_prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(w) +
                                                kWeightPrefetch * sizeof(float)),
                 _MM_HINT_T0);
    for (int r = 0; r < P; ++r) {
      const __m512 xv = _mm512_set1_ps(xq[r][c]);
      for (int z = 0; z < Z; ++z) acc[r][z] = fma_in_place(xv, wv[z], acc[r][z]);
      if constexpr (H) half[r] = _mm256_fmadd_ps(_mm512_castps512_ps256(xv), wh, half[r]);
    }
  };
  next.spread(p.taps * (Plain ? 1 : p.in_blocks));
  for (int64_t t = 0; t < p.taps; ++t) {
    const float *w = p.w + t * p.w_tap_stride;
    const float *xt = p.tap_offsets ? x + p.tap_offsets[t] : x;
    // Each pixel's input, where this tap's block starts: the channels are small displacements.
    const float *xq[P];
    if constexpr (Plain) {
      next.step();
      for (int r = 0; r < P; ++r) xq[r] = xt + at_pixel[r];
      channel(xq, 0, w);
    } else {
      for (int64_t cb = 0; cb < p.in_blocks; ++cb) {
        next.step();
        const float *xb = xt + cb * p.x_block_stride;
        for (int r = 0; r < P; ++r) xq[r] = xb + at_pixel[r];
#pragma GCC unroll 8
        for (int c = 0; c < kLanes; ++c) channel(xq, c, w + c * F * kLanes);
        w += kLanes * F * kLanes;
      }
    }
  }
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  for (int z = 0; z < Z; ++z)
    for (int r = 0; r < P; ++r) {
      __m512 v = acc[r][z];
      const int64_t at = 2 * z * ys + r * kLanes;
      if (p.last) {
        if (residual) v = _mm512_add_ps(v, load_halves(residual + at, ys));
        v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));  // max(lo, NaN) is NaN
      }
      store_halves(y + at, ys, v);
    }
  if constexpr (H)
    for (int r = 0; r < P; ++r) {
      __m256 v = half[r];
      const int64_t at = 2 * Z * ys + r * kLanes;
      if (p.last) {
        if (residual) v = _mm256_add_ps(v, _mm256_load_ps(residual + at));
        v = _mm256_min_ps(_mm512_castps512_ps256(hi), _mm256_max_ps(_mm512_castps512_ps256(lo), v));
      }
      _mm256_store_ps(y + at, v);
    }
}

// Whole tiles of P pixels, then the rest with tiles of P / 2, P / 4, ... 1. x and offsets: as
// tile() takes them, for pixel 0.
template <int F, int P, Input In>
void run_pixels(const NchwcConvTile &p, const float *x, const int64_t *offsets, float *y,
                const float *residual, int64_t pixels, int64_t done, int64_t all) {
  int64_t q = 0;
  const auto tile_x = [&](int64_t at) { return offsets ? x : x + at * p.x_pixel_stride; };
  const auto tile_offsets = [&](int64_t at) { return offsets ? offsets + at : nullptr; };
  for (; q + P <= pixels; q += P)
    tile<F, P, In>(p, tile_x(q), tile_offsets(q), y + q * kLanes,
                   residual ? residual + q * kLanes : nullptr, next_weights(p, done + q, P, all));
  if constexpr (P > 1) {
    if (q < pixels)
      run_pixels<F, P / 2, In>(p, tile_x(q), tile_offsets(q), y + q * kLanes,
                               residual ? residual + q * kLanes : nullptr, pixels - q, done + q,
                               all);
  }
}

template <Input In>
void run_filters(const NchwcConvTile &p, int64_t pixels) {
  const float *residual = p.last ? p.residual : nullptr;
  switch (p.filters) {
    case 8:
      return run_pixels<8, 6, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    case 7:
      return run_pixels<7, 6, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    case 6:
      return run_pixels<6, 8, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    case 5:
      return run_pixels<5, 8, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    case 4:
      return run_pixels<4, 12, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    case 3:
      return run_pixels<3, 12, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    case 2:
      return run_pixels<2, 12, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
    default:
      return run_pixels<1, 12, In>(p, p.x, p.pixel_offsets, p.y, residual, pixels, 0, pixels);
  }
}

}  // namespace

void f32_nchwc_conv_tile__avx512(const NchwcConvTile &p, int64_t pixels) {
  if (p.in_blocks == 0) return run_filters<Input::kPlain>(p, pixels);
  if (!p.pixel_offsets && p.x_pixel_stride == kLanes)
    return run_filters<Input::kConsecutive>(p, pixels);
  run_filters<Input::kOffsets>(p, pixels);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
