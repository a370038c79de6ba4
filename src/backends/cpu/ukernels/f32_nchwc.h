// Kernels of the channel-blocked layout NCHW8c (graph/ops/nchwc.cc, kernels/nchwc.cc): eight
// channels of a pixel in one vector.
#pragma once

#include <cstdint>

#include "backends/cpu/ukernels/f32_depthwise.h"
#include "backends/cpu/ukernels/l2_prefetch_share.h"
#include "core/cpu_isa.h"

namespace lumen::ukernels {

// Whether this CPU runs the kernels below built for `isa`. They are built on x86-64 with GCC or
// Clang only; elsewhere their callers link stand-ins that this keeps from running.
inline bool nchwc_runs(vec::Isa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  return vec::cpu_isa() >= isa;
#else
  return (void)isa, false;
#endif
}
inline bool nchwc_avx2() {
  return nchwc_runs(vec::Isa::Avx2);
}
inline bool nchwc_avx512() {
  return nchwc_runs(vec::Isa::Avx512);
}

inline constexpr int kNchwcBlock = 8;
// Output blocks one pointwise call computes at most (each tile: 12 accumulators, 12 / filters
// pixels by `filters` blocks). Three: four blocks by three pixels needs 17 vector registers with
// the weights held, so the compiler reloads each weight per pixel (MobileNetV2, 2 threads: 3%
// slower with groups of four).
inline constexpr int kNchwcMaxFilters = 3;
// The AVX-512 tile: two output blocks per vector (f32_nchwc_conv_tile__avx512.cc); up to six for
// a pointwise conv, eight where there are several taps (1 thread: a 3x3 256 -> 256 on 14x14
// 1.21 -> 1.14 ms, ResNet-50's first conv 1.39 -> 1.12; pointwise convs measured 3-6% faster at
// six).
inline constexpr int kNchwcMaxFilters512 = 6;
inline constexpr int kNchwcMaxFilters512Spatial = 8;

// Pixels [0, pixels) of one output row segment, `filters` output blocks, summed over `taps`
// kernel taps and `in_blocks` input blocks: y[f][q][l] (+)= sum over tap t and input channel k of
// w[t][k][f][l] * x[k / 8][q + tap t][k % 8]. A pointwise conv has one tap at offset 0; a
// grouped or dense conv reads a zero-padded copy of its input, so no tap falls outside it.
struct NchwcConvTile {
  const float *x;          // input block 0 at the segment's first pixel (its first tap)
  int64_t x_block_stride;  // floats between input blocks
  int64_t x_pixel_stride;  // floats between the inputs of two consecutive outputs (8 * stride)
  // Or, where the pixels span output rows (a small map's band in one call, whole tiles across its
  // rows): floats from x to each pixel's first tap, `pixels` of them; nullptr: q * x_pixel_stride.
  const int64_t *pixel_offsets = nullptr;
  // 0: a plain NCHW input (a network's first conv, on 3 channels), where each "tap" is one
  // (kernel tap, input channel) pair: one float per pixel at its offset, weights [filters][8].
  int64_t in_blocks;
  int64_t taps = 1;
  const int64_t *tap_offsets = nullptr;  // floats from a pixel's first tap to each; nullptr: {0}
  const float *w;  // tap t at w + t * w_tap_stride: [in_blocks * 8 (or 1)][filters][8]
  int64_t w_tap_stride = 0;
  int filters;             // 1..kNchwcMaxFilters (kNchwcMaxFilters512Spatial for the AVX-512 tile)
  const float *bias;       // [filters][8] or nullptr; added unless accumulating
  float *y;                // output block 0 at the segment's first pixel; pixels 8 apart
  int64_t y_block_stride;  // floats between output blocks
  const float *residual;   // laid out like y, added when `last`; or nullptr
  // The weights the next call reads (or nullptr): prefetched into L2 across this call's tiles, a
  // few lines per input block. Weights come from memory once per model run; read first by the
  // tile that needs them, they stall it.
  const float *next_w = nullptr;
  int64_t next_w_floats = 0;
  bool accumulate;  // y += the sums (a later slice of the input blocks)
  bool last;        // the final slice: add the residual, then clamp to [lo, hi]
  float lo, hi;
};
// Pixels [done, done + n) of the call's `all`: their share of the next call's weights.
inline L2PrefetchShare next_weights(const NchwcConvTile &p, int64_t done, int64_t n, int64_t all) {
  return {p.next_w, p.next_w_floats * int64_t(sizeof(float)), done, n, all};
}

void f32_nchwc_conv_tile__avx2(const NchwcConvTile &p, int64_t pixels);
void f32_nchwc_conv_tile__avx512(const NchwcConvTile &p, int64_t pixels);

// Output rows [row_begin, row_end) of a depthwise conv of one channel block: d.x is the block's
// input [h][w][8], d.y its output [oh][ow][8] (32-byte aligned), wv the weights [kh * kw][8],
// d.bias the block's 8 biases (or nullptr); residual (or nullptr) is laid out like d.y and added
// before the clamp. scratch: f32_depthwise_scratch(d, 8) floats, 64-byte aligned. d.channels is
// ignored (always 8).
// wide_row (or nullptr): the output rows of a wider ISA (f32_nchwc_depthwise_row__avx512).
using NchwcDepthwiseRow = void (*)(const float *in, int64_t ow, int64_t step, int64_t kh,
                                   int64_t kw, int64_t row_step, int64_t col_step, const float *wv,
                                   const float *bias8, float lo, float hi, float *out);
void f32_nchwc_depthwise__avx2(const DepthwiseChannels &d, const float *wv, const float *residual,
                               int64_t row_begin, int64_t row_end, float *scratch,
                               NchwcDepthwiseRow wide_row = nullptr);
// `ow` outputs of one row, each the kh x kw taps of a block (in: the first output's window, step
// floats between two outputs' windows, row_step and col_step between kernel rows and columns; wv
// [kh * kw][8]; bias8 the block's 8 biases), two outputs per vector, for kernel width kw and
// stride sw.
NchwcDepthwiseRow f32_nchwc_depthwise_row__avx512(int64_t kw, int64_t sw);

// Max or average pooling of one blocked plane: x [h][w][8], y [oh][ow][8]. Per output row i the
// kernel rows [row_lo[i], row_hi[i]) fall inside the image, per output column j the kernel
// columns [col_lo[j], col_hi[j]); an average divides by row_div[i] * col_div[j].
struct NchwcPool {
  const float *x;
  float *y;
  int64_t w, ow, sh, sw, pt, pl, dh, dw;
  const int64_t *row_lo, *row_hi, *col_lo, *col_hi;
  const float *row_div, *col_div;
  bool max;
};
void f32_nchwc_pool_rows__avx2(const NchwcPool &p, int64_t row_begin, int64_t row_end);
void f32_nchwc_pool_rows__avx512(const NchwcPool &p, int64_t row_begin, int64_t row_end);

// 8 channel planes (plane floats apart) of `pixels` pixels -> [pixels][8] (32-byte aligned).
void f32_to_nchw8c__avx2(const float *x, int64_t plane, int64_t pixels, float *y);
// The inverse: [pixels][8] (32-byte aligned) -> 8 planes.
void f32_from_nchw8c__avx2(const float *x, int64_t pixels, float *y, int64_t plane);

}  // namespace lumen::ukernels
