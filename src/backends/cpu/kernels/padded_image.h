// A stride-1 or stride-2 convolution's input as a zero-padded copy, and its im2col matrix as rows
// of that copy. The output is computed on a grid of oh rows of Wp columns, Wp = ow plus what the
// kernel overhangs; the last Wp - ow columns of each row are discarded by the caller (and the last
// row's are not computed: a 1-D conv, one output row, costs no extra columns at all).
//
// Stride 1: one padded plane per channel, Wp = ow + (kw - 1) * dw, and row k = (c, a, b) of B is
// the plane shifted by c * plane + a * dh * Wp + b * dw.
// Stride 2: each padded plane is split by row and column parity into four planes of
// (oh + (kh - 1) / 2) x Wp, Wp = ow + (kw - 1) / 2, so that tap (a, b) of every output is at the
// same offset: plane (a % 2, b % 2), shifted by (a / 2) * Wp + b / 2. Rows of B are contiguous
// either way: the GEMM packs each panel step with one contiguous copy, no im2col gather.
#pragma once

#include <memory>

#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/thread_pool.h"
#include "lumen/tensor.h"

namespace lumen::cpu {

class PaddedImage {
 public:
  // Copies the group's input channels (starting at `x`) into zero-padded planes, over `pool`,
  // followed by `zero_channels` channels of zeros (for taps that fall outside an N-D conv's
  // outer dims, see conv_nd.cc).
  PaddedImage(ThreadPool &pool, const ConvParams &p, const float *x, int64_t zero_channels = 0);

  // The grid's row width (Wp) for this conv, or 0 where the padded grid does not apply: 1x1
  // kernels, negative padding, strides other than 1 and 2 (2 undilated), or (stride 1) a grid
  // that would not hold the whole input.
  static int64_t grid_width_for(const ConvParams &p);
  // Whether the padded grid applies to this conv and costs `kernel` few extra lanes (see the .cc).
  static bool worthwhile(const ConvParams &p, const F32GemmMicrokernel &kernel);
  int64_t grid_width() const { return wp_; }  // Wp
  // The grid's columns up to the last output: the last row's discarded ones are not computed.
  int64_t columns() const { return oh_ > 0 ? (oh_ - 1) * wp_ + ow_ : 0; }
  // B's rows for p's taps, in im2col order (c, a, b).
  const GemmB &b() const { return *b_; }
  // Where the row of channel c (of p.cg + zero_channels), kernel tap (a, b), starts in data().
  int64_t tap_offset(int64_t c, int64_t a, int64_t b) const;
  const float *data() const { return padded_.data<float>(); }

 private:
  bool stride2_;
  int64_t oh_, ow_, wp_, plane_ = 0, dh_, dw_;
  Tensor padded_;  // the planes, plus the floats read only by the last row's discarded columns
  std::unique_ptr<RowTableB> b_;
};

}  // namespace lumen::cpu
