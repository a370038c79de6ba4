// The im2col matrix of one image and group, [cg * kh * kw, oh * ow], as a GEMM B operand that
// packs its panels straight from the NCHW input: a convolution never materializes the whole
// matrix, only the kc x nc block the GEMM is working on.
#pragma once

#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"

namespace lumen::cpu {

class Im2colB final : public GemmB {
 public:
  // `x` points at the group's first input channel of one image.
  Im2colB(const ConvParams &p, const float *x) : p_(p), x_(x) {}
  PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                    float *buffer) const override;
  bool gathered() const override { return true; }

 private:
  const ConvParams &p_;
  const float *x_;
};

}  // namespace lumen::cpu
