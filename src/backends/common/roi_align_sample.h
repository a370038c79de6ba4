// One sampling point of roi_align, as ONNX defines it, shared by the backends' kernels: a point
// more than one pixel outside the map contributes nothing; others are clamped to the map and
// interpolated bilinearly from four pixels.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lumen {

struct RoiSample {
  bool inside = false;               // false: the point contributes 0
  int64_t offset[4] = {0, 0, 0, 0};  // pixels (y * W + x): top-left, top-right, ...
  double weight[4] = {0, 0, 0, 0};
};

inline RoiSample roi_sample(double yy, double xx, int64_t h, int64_t w) {
  RoiSample s;
  if (yy < -1.0 || yy > double(h) || xx < -1.0 || xx > double(w) || h <= 0 || w <= 0) return s;
  yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
  int64_t ylo = int64_t(yy), xlo = int64_t(xx), yhi, xhi;
  if (ylo >= h - 1)
    yhi = ylo = h - 1, yy = double(ylo);
  else
    yhi = ylo + 1;
  if (xlo >= w - 1)
    xhi = xlo = w - 1, xx = double(xlo);
  else
    xhi = xlo + 1;
  const double ly = yy - double(ylo), lx = xx - double(xlo);
  s.inside = true;
  s.offset[0] = ylo * w + xlo, s.offset[1] = ylo * w + xhi;
  s.offset[2] = yhi * w + xlo, s.offset[3] = yhi * w + xhi;
  s.weight[0] = (1 - ly) * (1 - lx), s.weight[1] = (1 - ly) * lx;
  s.weight[2] = ly * (1 - lx), s.weight[3] = ly * lx;
  return s;
}

}  // namespace lumen
