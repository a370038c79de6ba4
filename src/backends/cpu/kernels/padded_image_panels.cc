#include "backends/cpu/kernels/padded_image_panels.h"

#include <algorithm>
#include <cstring>

namespace lumen::cpu {

bool PaddedImageB::worthwhile(const ConvParams &p) {
  if (p.sh != 1 || p.sw != 1 || p.kh * p.kw == 1) return false;
  const int64_t hp = p.oh + (p.kh - 1) * p.dh, wp = p.ow + (p.kw - 1) * p.dw;
  // The padded grid must hold the whole input (no negative padding on the far side).
  if (hp < p.h + p.pt || wp < p.w + p.pl || p.pt < 0 || p.pl < 0) return false;
  // At most ~10% extra columns: a 3x3 conv on maps at least 20 wide.
  return 10 * (wp - p.ow) <= p.ow;
}

PaddedImageB::PaddedImageB(const ConvParams &p, const float *x)
    : p_(p), hp_(p.oh + (p.kh - 1) * p.dh), wp_(p.ow + (p.kw - 1) * p.dw) {
  const int64_t plane = hp_ * wp_;
  const int64_t slack = (p.kw - 1) * p.dw;
  padded_ = Tensor::empty(Shape{checked_add(checked_mul(p.cg, plane), slack)}, DType::Float32);
  float *dst = padded_.data<float>();
  std::fill(dst + p.cg * plane, dst + p.cg * plane + slack, 0.0f);
  for (int64_t c = 0; c < p.cg; ++c) {
    float *out = dst + c * plane;
    const float *in = x + c * p.h * p.w;
    std::fill(out, out + p.pt * wp_, 0.0f);
    for (int64_t i = 0; i < p.h; ++i) {
      float *row = out + (p.pt + i) * wp_;
      std::fill(row, row + p.pl, 0.0f);
      std::memcpy(row + p.pl, in + i * p.w, static_cast<size_t>(p.w) * sizeof(float));
      std::fill(row + p.pl + p.w, row + wp_, 0.0f);
    }
    std::fill(out + (p.pt + p.h) * wp_, out + plane, 0.0f);
  }
}

PanelBlock PaddedImageB::panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                                float *buffer) const {
  const ConvParams &p = p_;
  const int64_t plane = hp_ * wp_;
  const float *image = padded_.data<float>();
  for (int64_t j = 0; j * nr < nc; ++j) {
    const int64_t c0 = n0 + j * nr;
    const int cols = static_cast<int>(std::min<int64_t>(nr, n0 + nc - c0));
    float *dst = buffer + j * kc * nr;
    KernelTap tap(p, k0);
    for (int64_t q = 0; q < kc; ++q, dst += nr, tap.next(p)) {
      const int64_t ci = tap.c, a = tap.a, b = tap.b;
      const float *src = image + ci * plane + a * p.dh * wp_ + b * p.dw + c0;
      for (int i = 0; i < cols; ++i) dst[i] = src[i];
      for (int i = cols; i < nr; ++i) dst[i] = 0.0f;
    }
  }
  return {buffer, kc * nr};
}

}  // namespace lumen::cpu
