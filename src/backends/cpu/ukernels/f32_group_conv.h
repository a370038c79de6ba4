// Grouped convolution with few output channels per group (kernels/grouped_conv.cc): 8 output
// channels of one group in the lanes of a vector, each input value broadcast to them.
#pragma once

#include <cstdint>

namespace lumen::ukernels {

// Output rows of 8 output channels of one group, from a zero-padded strip of the group's input
// planes. Output (i, j) of channel l is bias[l] + the sum over input channel c and tap (a, b) of
// weights[((c * kh + a) * kw + b) * 8 + l] * x[c * channel_stride + (i * sh + a * dh) * wp +
// j * sw + b * dw]: a GEMM whose A is the input, read in place (any stride and dilation), and
// whose B is the 8 channels' weights. Up to 12 outputs of a row share each weight vector.
struct GroupConvRows {
  const float *x;  // the strip: [cg][rows][wp], padded
  int64_t cg, channel_stride, wp;
  int64_t kh, kw, sh, sw, dh, dw;
  const float *weights;  // [cg][kh][kw][8]
  const float *bias;     // [8], or nullptr
  int64_t oh, ow;        // output rows of this strip, and their width
  float *y;              // channel 0's plane at the strip's first output row
  int64_t out_plane;     // floats between two channels' planes
  float *scratch;        // (ow + 8) * 8 floats, 32-byte aligned
  // Each output clamped to [lo, hi] (relu, relu6; NaN stays NaN).
  float lo = -__builtin_inff(), hi = __builtin_inff();
};

void f32_group_conv_c8__avx2(const GroupConvRows &d);

}  // namespace lumen::ukernels
