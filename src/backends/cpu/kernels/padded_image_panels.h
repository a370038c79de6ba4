// A stride-1 convolution's B operand read from a zero-padded copy of the input. The output is
// computed on the padded grid (oh rows of Wp = ow + (kw - 1) * dw columns; the last Wp - ow
// columns of each row are discarded by the caller), and there row k = (c, a, b) of B is the padded
// image shifted by a * dh * Wp + b * dw: every panel row is one contiguous copy, where im2col
// needs a few short runs per row. Worth it when the extra columns are few (wide feature maps).
#pragma once

#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"
#include "lumen/tensor.h"

namespace lumen::cpu {

class PaddedImageB final : public GemmB {
 public:
  // Copies the group's input channels (starting at `x`) into a zero-padded buffer.
  PaddedImageB(const ConvParams &p, const float *x);
  PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                    float *buffer) const override;

  // Whether the padded grid applies to this conv and costs few extra columns.
  static bool worthwhile(const ConvParams &p);
  int64_t grid_width() const { return wp_; }  // Wp
  int64_t columns() const { return p_.oh * wp_; }

 private:
  const ConvParams &p_;
  int64_t hp_, wp_;
  Tensor padded_;  // [cg, hp, wp] plus (kw - 1) * dw floats read only by discarded columns
};

}  // namespace lumen::cpu
