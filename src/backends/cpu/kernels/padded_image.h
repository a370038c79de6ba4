// A stride-1 convolution's input as a zero-padded copy, and its im2col matrix as rows of that
// copy. The output is computed on the padded grid (oh rows of Wp = ow + (kw - 1) * dw columns;
// the last Wp - ow columns of each row are discarded by the caller), and there row k = (c, a, b)
// of B is the padded image shifted by c * plane + a * dh * Wp + b * dw: micro-kernels that read B
// in place need no packing at all, the others pack each panel row with one contiguous copy.
#pragma once

#include <memory>

#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/thread_pool.h"
#include "lumen/tensor.h"

namespace lumen::cpu {

class PaddedImage {
 public:
  // Copies the group's input channels (starting at `x`) into a zero-padded buffer, over `pool`.
  PaddedImage(ThreadPool &pool, const ConvParams &p, const float *x);

  // Whether the padded grid applies to this conv and costs few extra columns: with `kernel`
  // reading B in place, few extra column tiles; otherwise (packing), at most ~10% extra columns.
  static bool worthwhile(const ConvParams &p, const F32GemmMicrokernel &kernel);
  int64_t grid_width() const { return wp_; }  // Wp
  int64_t columns() const { return oh_ * wp_; }
  const GemmB &b() const { return *b_; }

 private:
  int64_t oh_, wp_;
  Tensor padded_;  // [cg, hp, wp] plus (kw - 1) * dw floats read only by discarded columns
  std::unique_ptr<RowTableB> b_;
};

}  // namespace lumen::cpu
