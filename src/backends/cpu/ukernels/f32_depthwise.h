// Depthwise convolution kernels (kernels/depthwise_conv.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lumen::ukernels {

// A 3x3 depthwise conv (dilation 1, stride 1 or 2) of up to 16 (AVX-512) or 8 (AVX2) consecutive
// channels of one image, each channel in one vector lane. Strip by strip of output rows: the input
// rows the strip reads are transposed (16x16 in registers) into a zero-padded [rows][cols][16]
// scratch, every output is 9 full-width multiply-adds, and the outputs are transposed back into the
// channels' planes. One plane at a time leaves vectors mostly empty on small planes and pays for
// borders.
struct DepthwiseChannels {
  const float *x;  // first channel's input plane; the others follow, h * w apart
  int64_t h, w, pt, pl, stride;
  const float *weights;  // [channels][3][3]
  const float *bias;     // [channels], or nullptr
  int channels;          // 1..lanes
  float *y;              // first channel's output plane; the others follow, oh * ow apart
  int64_t oh, ow;
};

// Output rows per strip: the strip's padded input rows stay within ~48 KiB (L1/L2).
inline int64_t f32_depthwise3x3_strip(const DepthwiseChannels &d, int lanes) {
  const int64_t cols = (d.ow - 1) * d.stride + 3;
  const int64_t rows = (48 * 1024) / (cols * lanes * 4);  // padded input rows that fit
  const int64_t strip = (rows - 3) / d.stride + 1;
  return strip < 1 ? 1 : strip > d.oh ? d.oh : strip;
}

// Floats of scratch (64-byte aligned) the kernel needs: a strip's padded input and its outputs
// (rounded up to whole blocks of `lanes` positions).
inline size_t f32_depthwise3x3_scratch(const DepthwiseChannels &d, int lanes) {
  const int64_t strip = f32_depthwise3x3_strip(d, lanes);
  const int64_t rows = (strip - 1) * d.stride + 3, cols = (d.ow - 1) * d.stride + 3;
  return static_cast<size_t>((rows * cols + strip * d.ow + lanes) * lanes);
}

// evens[i] = src[2 i] for 2 i < n, odds[i] = src[2 i + 1] for 2 i + 1 < n.
void f32_deinterleave__avx2(const float *src, int64_t n, float *evens, float *odds);

void f32_depthwise3x3_c16__avx512(const DepthwiseChannels &d, float *scratch);
void f32_depthwise3x3_c8__avx2(const DepthwiseChannels &d, float *scratch);

}  // namespace lumen::ukernels
