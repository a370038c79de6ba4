// Depthwise convolution kernels (kernels/depthwise_conv.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lumen::ukernels {

// A 3x3 depthwise conv (dilation 1, stride 1 or 2) of up to 16 consecutive channels of one
// image, each channel in one vector lane: the input planes are transposed into a zero-padded
// [rows][cols][16] scratch, every output is 9 full-width multiply-adds, and the outputs are
// transposed back into the channels' planes. Suits small planes (7x7 to 28x28), where one plane
// at a time leaves vectors mostly empty.
struct DepthwiseChannels {
  const float *x;  // first channel's input plane; the others follow, h * w apart
  int64_t h, w, pt, pl, stride;
  const float *weights;  // [channels][3][3]
  const float *bias;     // [channels], or nullptr
  int channels;          // 1..16
  float *y;              // first channel's output plane; the others follow, oh * ow apart
  int64_t oh, ow;
};

// Floats of scratch (64-byte aligned) the kernel needs: the padded input and the outputs.
inline size_t f32_depthwise3x3_c16_scratch(const DepthwiseChannels &d) {
  const int64_t rows = (d.oh - 1) * d.stride + 3, cols = (d.ow - 1) * d.stride + 3;
  return static_cast<size_t>((rows * cols + d.oh * d.ow) * 16);
}
void f32_depthwise3x3_c16__avx512(const DepthwiseChannels &d, float *scratch);

}  // namespace lumen::ukernels
