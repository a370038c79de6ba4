// Depthwise convolution kernels (kernels/depthwise_conv.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lumen::ukernels {

// A depthwise conv of up to 16 (AVX-512) or 8 (AVX2) consecutive channels of one image, each
// channel in one vector lane. Strip by strip of output rows: the input rows the strip reads are
// transposed (8x8 or 16x16 in registers) into a zero-padded [rows][cols][lanes] scratch, every
// output is kh * kw full-width multiply-adds, and the outputs are transposed back into the
// channels' planes. One plane at a time leaves vectors mostly empty on small planes and pays for
// borders.
struct DepthwiseChannels {
  const float *x;  // first channel's input plane; the others follow, h * w apart
  int64_t h, w, pt, pl;
  int64_t kh, kw, sh, sw, dh, dw;  // kernel, strides, dilations
  const float *weights;            // [channels][kh][kw]
  const float *bias;               // [channels], or nullptr
  int channels;                    // 1..lanes
  float *y;                        // first channel's output plane; the others follow, oh * ow apart
  int64_t oh, ow;
  // Each output clamped to [lo, hi] (relu, relu6; NaN stays NaN). The AVX-512 3x3 kernel does not.
  float lo = -__builtin_inff(), hi = __builtin_inff();

  // The padded input columns every strip reads, and the rows a strip of `strip` output rows reads.
  int64_t padded_cols() const { return (ow - 1) * sw + (kw - 1) * dw + 1; }
  int64_t padded_rows(int64_t strip) const { return (strip - 1) * sh + (kh - 1) * dh + 1; }
};

// Output rows per strip: the strip's padded input rows stay within ~48 KiB (L1/L2).
inline int64_t f32_depthwise_strip(const DepthwiseChannels &d, int lanes) {
  const int64_t rows = (48 * 1024) / (d.padded_cols() * lanes * 4);  // padded rows that fit
  const int64_t strip = (rows - ((d.kh - 1) * d.dh + 1)) / d.sh + 1;
  return strip < 1 ? 1 : strip > d.oh ? d.oh : strip;
}

// Floats of scratch (64-byte aligned) the kernels need: the weights in lanes, a strip's padded
// input and its outputs (rounded up to whole blocks of `lanes` positions).
inline size_t f32_depthwise_scratch(const DepthwiseChannels &d, int lanes) {
  const int64_t strip = f32_depthwise_strip(d, lanes);
  const int64_t taps = d.kh * d.kw;
  return static_cast<size_t>(
      (taps + d.padded_rows(strip) * d.padded_cols() + strip * d.ow + lanes) * lanes);
}

// Plane by plane, 3x3 (kernels/depthwise_conv.cc): out[t] = clamp(bias + sum over taps (a, b) of
// k[3 a + b] * in[t + a * l + b], lo, hi) for t < len, `in` a zero-padded plane with rows l
// apart (NaN stays NaN).
void f32_depthwise3x3_s1_rows__avx2(const float *in, int64_t l, const float *k, float bias,
                                    float lo, float hi, float *out, int64_t len);
// Stride 2 over the plane's four parity planes (ee, eo, oe, oo: row and column parity, rows l
// apart): tap (a, b) of output t reads parity plane (a % 2, b % 2) at t + (a / 2) * l + b / 2.
void f32_depthwise3x3_s2_rows__avx2(const float *ee, const float *eo, const float *oe,
                                    const float *oo, int64_t l, const float *k, float bias,
                                    float lo, float hi, float *out, int64_t len);

// evens[i] = src[2 i] for 2 i < n, odds[i] = src[2 i + 1] for 2 i + 1 < n.
void f32_deinterleave__avx2(const float *src, int64_t n, float *evens, float *odds);

// 3x3 only, sh == sw, dilation 1.
void f32_depthwise3x3_c16__avx512(const DepthwiseChannels &d, float *scratch);
// Any kernel, strides, dilations.
void f32_depthwise_c8__avx2(const DepthwiseChannels &d, float *scratch);

}  // namespace lumen::ukernels
