// roi_align as ONNX defines it, shared by the backends' kernels: the attributes, each roi's bins
// and sampling grid, and one sampling point (more than one pixel outside the map contributes
// nothing; others are clamped to the map and interpolated bilinearly from four pixels).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/kernel.h"

namespace lumen {

struct RoiAlignParams {
  bool avg, half_pixel;
  double scale;
  int64_t ratio;  // sampling points per bin side; 0: ceil(bin size)
};

inline RoiAlignParams roi_align_params(const Attributes &a) {
  return {a.get_string("mode", "avg") == "avg",
          a.get_string("coordinate_transformation_mode", "half_pixel") == "half_pixel",
          a.get_float("spatial_scale", 1.0), a.get_int("sampling_ratio", 0)};
}

// Roi r's image in a batch of n, from the batch_indices input (int32 or int64); checked.
inline int64_t roi_batch(const KernelContext &ctx, const Tensor &indices, int64_t r, int64_t n) {
  const int64_t b =
      indices.dtype() == DType::Int32 ? indices.data<int32_t>()[r] : indices.data<int64_t>()[r];
  if (b < 0 || b >= n) ctx.fail("batch index ", b, " is out of range for batch size ", n);
  return b;
}

// One roi (x0, y0, x1, y1 in input coordinates) cut into oh x ow bins of gh x gw points each.
struct RoiBins {
  double x0, y0, bh, bw;
  int64_t gh, gw;
  RoiBins(const RoiAlignParams &p, const double roi[4], int64_t oh, int64_t ow) {
    const double off = p.half_pixel ? 0.5 : 0.0;
    x0 = roi[0] * p.scale - off, y0 = roi[1] * p.scale - off;
    double rw = roi[2] * p.scale - off - x0, rh = roi[3] * p.scale - off - y0;
    if (!p.half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    bh = rh / double(oh), bw = rw / double(ow);
    gh = p.ratio > 0 ? p.ratio : int64_t(std::ceil(rh / double(oh)));
    gw = p.ratio > 0 ? p.ratio : int64_t(std::ceil(rw / double(ow)));
  }
  // Sampling point (iy, ix) of bin (ph, pw): its y, then x.
  double y(int64_t ph, int64_t iy) const {
    return y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
  }
  double x(int64_t pw, int64_t ix) const {
    return x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
  }
};

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
