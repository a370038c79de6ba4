// Reference grid_sample: for each output location, denormalize the grid coordinates (reversed:
// the grid's last dim lists the innermost input dim first), apply the padding mode to coordinates
// outside the input, and interpolate with 1 (nearest), 2 (linear) or 4 (cubic, Keys a=-0.75)
// taps per spatial dim as a tensor product. Taps that fall outside read 0 (zeros), the clamped
// pixel (border) or the reflected pixel (reflection). Computed in double.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "backends/common/grid_sample_taps.h"
#include "backends/common/roi_align_sample.h"
#include "core/kernel.h"

namespace lumen {
namespace {

using grid_sample_taps::cubic_coeffs;
using grid_sample_taps::reflect;

void grid_sample(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  Tensor &y = ctx.output(0);
  const std::string mode = ctx.attrs.get_string("mode", "linear");
  const std::string pad = ctx.attrs.get_string("padding_mode", "zeros");
  const bool align = ctx.attrs.get_int("align_corners", 0) != 0;
  const size_t rank = x.rank(), r = rank - 2;
  const int64_t N = x.shape()[0], C = x.shape()[1];
  std::vector<int64_t> dims(r);
  int64_t in_size = 1, out_size = 1;
  for (size_t d = 0; d < r; ++d) dims[d] = x.shape()[2 + d], in_size *= dims[d];
  for (size_t d = 0; d < r; ++d) out_size *= grid.shape()[1 + d];
  const std::vector<double> xv = to_f64(ctx, x), gv = to_f64(ctx, grid);
  std::vector<double> yv(static_cast<size_t>(y.numel()), 0.0);
  if (yv.empty()) return from_f64(ctx, y, yv);
  std::vector<double> lo(r), hi(r);
  for (size_t d = 0; d < r; ++d) {
    lo[d] = align ? 0.0 : -0.5;
    hi[d] = align ? double(dims[d] - 1) : double(dims[d]) - 0.5;
  }
  const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  std::vector<double> pos(r);
  std::vector<std::vector<int64_t>> idx(r, std::vector<int64_t>(size_t(taps)));
  std::vector<std::vector<double>> w(r, std::vector<double>(size_t(taps)));
  std::vector<std::vector<bool>> valid(r, std::vector<bool>(size_t(taps)));
  std::vector<int> k(r);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < out_size; ++o) {
      const double *g = &gv[size_t((n * out_size + o) * int64_t(r))];
      for (size_t d = 0; d < r; ++d) {
        const double v = g[r - 1 - d];
        const double len = double(dims[d]);
        double p = align ? (v + 1) / 2.0 * (len - 1) : ((v + 1) * len - 1) / 2.0;
        // Not finite or beyond 2^30: far outside the input, without an undefined int conversion.
        p = p == p ? std::clamp(p, -1073741824.0, 1073741824.0) : -1073741824.0;
        if (mode == "nearest") p = std::nearbyint(p);  // ties to even
        if (p < lo[d] || p > hi[d]) {
          if (pad == "border") p = std::clamp(p, 0.0, len - 1);
          if (pad == "reflection") p = reflect(p, lo[d], hi[d]);
        }
        int64_t base = 0;
        if (mode == "nearest") {
          base = int64_t(p);  // truncation, as the reference does
          w[d][0] = 1;
        } else if (mode == "linear") {
          base = int64_t(std::floor(p));
          const double t = p - double(base);
          w[d][0] = 1 - t, w[d][1] = t;
        } else {
          base = int64_t(std::floor(p)) - 1;
          cubic_coeffs(p - std::floor(p), w[d].data());
        }
        for (int t = 0; t < taps; ++t) {
          int64_t i = base + t;
          bool ok = true;
          if (i < 0 || i >= dims[d]) {
            if (pad == "zeros") {
              ok = false;
            } else if (pad == "border") {
              i = std::clamp<int64_t>(i, 0, dims[d] - 1);
            } else {
              i = int64_t(reflect(double(i), lo[d], hi[d]));
              i = std::clamp<int64_t>(i, 0, dims[d] - 1);
            }
          }
          idx[d][size_t(t)] = i;
          valid[d][size_t(t)] = ok;
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        const double *src = &xv[size_t((n * C + c) * in_size)];
        double sum = 0;
        std::fill(k.begin(), k.end(), 0);
        while (true) {
          double weight = 1;
          bool ok = true;
          int64_t off = 0;
          for (size_t d = 0; d < r; ++d) {
            weight *= w[d][size_t(k[d])];
            ok = ok && valid[d][size_t(k[d])];
            off = off * dims[d] + idx[d][size_t(k[d])];
          }
          if (ok) sum += weight * src[off];
          size_t d = r;
          while (d > 0 && ++k[d - 1] == taps) k[--d] = 0;
          if (d == 0) break;
        }
        yv[size_t((n * C + c) * out_size + o)] = sum;
      }
    }
  }
  from_f64(ctx, y, yv);
}

LUMEN_REGISTER_KERNEL("reference", "grid_sample", grid_sample, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

// affine_grid: grid[n, (d,) h, w] = theta[n] @ [x, y, (z,) 1] where each base coordinate is
// -1 + 2 i / (len - 1) (align_corners; -1 for len 1) or -1 + (2 i + 1) / len.
void affine_grid(KernelContext &ctx) {
  const Tensor &theta = ctx.input(0);
  Tensor &y = ctx.output(0);
  const bool align = ctx.attrs.get_int("align_corners", 0) != 0;
  const size_t r = y.rank() - 2;  // 2 or 3
  const int64_t N = y.shape()[0];
  std::vector<int64_t> dims(r);
  int64_t count = 1;
  for (size_t d = 0; d < r; ++d) dims[d] = y.shape()[1 + d], count *= dims[d];
  const std::vector<double> tv = to_f64(ctx, theta);
  std::vector<double> yv(static_cast<size_t>(y.numel()));
  auto base = [&](int64_t i, int64_t len) {
    if (align) return len > 1 ? -1.0 + 2.0 * double(i) / double(len - 1) : -1.0;
    return -1.0 + (2.0 * double(i) + 1.0) / double(len);
  };
  std::vector<double> hom(r + 1);
  for (int64_t n = 0; n < N; ++n) {
    const double *t = &tv[size_t(n) * r * (r + 1)];
    for (int64_t p = 0; p < count; ++p) {
      // hom = [x (innermost dim), y, (z,) 1].
      int64_t rest = p;
      for (size_t d = r; d-- > 0;) {
        hom[r - 1 - d] = base(rest % dims[d], dims[d]);
        rest /= dims[d];
      }
      hom[r] = 1;
      for (size_t i = 0; i < r; ++i) {
        double s = 0;
        for (size_t j = 0; j <= r; ++j) s += t[i * (r + 1) + j] * hom[j];
        yv[size_t((n * count + p) * int64_t(r)) + i] = s;
      }
    }
  }
  from_f64(ctx, y, yv);
}

LUMEN_REGISTER_KERNEL("reference", "affine_grid", affine_grid, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

// roi_align: per roi and output bin, a grid of sampling points (sampling_ratio per side, or
// ceil(bin size)); each point is bilinearly interpolated (points more than one pixel outside
// count 0; others are clamped to the image) and the bin is the average, or the max of the
// weighted corner values (as ONNX's reference does).
void roi_align(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &rois_t = ctx.input(1), &idx_t = ctx.input(2);
  Tensor &y = ctx.output(0);
  const RoiAlignParams params = roi_align_params(ctx.attrs);
  const bool avg = params.avg;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t R = y.shape()[0], OH = y.shape()[2], OW = y.shape()[3];
  const std::vector<double> xv = to_f64(ctx, x), rv = to_f64(ctx, rois_t);
  std::vector<double> yv(static_cast<size_t>(y.numel()), 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const int64_t b = roi_batch(ctx, idx_t, r, N);
    const RoiBins bins(params, &rv[size_t(r * 4)], OH, OW);
    const int64_t gh = bins.gh, gw = bins.gw;
    const double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double *img = &xv[size_t((b * C + c) * H * W)];
      for (int64_t ph = 0; ph < OH; ++ph) {
        for (int64_t pw = 0; pw < OW; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            for (int64_t ix = 0; ix < gw; ++ix) {
              const RoiSample p = roi_sample(bins.y(ph, iy), bins.x(pw, ix), H, W);
              const double *w = p.weight;
              double v[4] = {0, 0, 0, 0};
              if (p.inside)
                for (int k = 0; k < 4; ++k) v[k] = img[p.offset[k]];
              if (avg) {
                acc += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
              } else {
                const double m = std::max(std::max(w[0] * v[0], w[1] * v[1]),
                                          std::max(w[2] * v[2], w[3] * v[3]));
                acc = first ? m : std::max(acc, m);
                first = false;
              }
            }
          }
          yv[size_t(((r * C + c) * OH + ph) * OW + pw)] = avg ? acc / count : acc;
        }
      }
    }
  }
  from_f64(ctx, y, yv);
}

LUMEN_REGISTER_KERNEL("reference", "roi_align", roi_align, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

// deform_conv: y[n, m, i, j] = b[m] + sum over the group's input channels c and taps (u, v) of
// w[m, c, u, v] * mask * bilinear(x[n, c], i * sh - pt + u * dh + dy, j * sw - pl + v * dw + dx),
// corners outside the image reading 0.
void deform_conv(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &w_t = ctx.input(1), &off_t = ctx.input(2);
  Tensor &y = ctx.output(0);
  const int64_t group = ctx.attrs.get_int("group", 1), og = ctx.attrs.get_int("offset_group", 1);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w_t.shape()[0], CG = w_t.shape()[1], KH = w_t.shape()[2], KW = w_t.shape()[3];
  const int64_t OH = y.shape()[2], OW = y.shape()[3];
  const std::vector<int64_t> s = ctx.attrs.get_ints("strides", {1, 1});
  const std::vector<int64_t> d = ctx.attrs.get_ints("dilations", {1, 1});
  const std::vector<int64_t> p = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const std::vector<double> xv = to_f64(ctx, x), wv = to_f64(ctx, w_t), ov = to_f64(ctx, off_t);
  const std::vector<double> bv =
      ctx.has_input(3) ? to_f64(ctx, ctx.input(3)) : std::vector<double>();
  const std::vector<double> mv =
      ctx.has_input(4) ? to_f64(ctx, ctx.input(4)) : std::vector<double>();
  if (ctx.has_input(4)) {
    const Shape &ms = ctx.input(4).shape();
    if (ms[0] != N || ms[1] != og * KH * KW || ms[2] != OH || ms[3] != OW)
      ctx.fail("mask ", ms.to_string(), " does not match");
  }
  if (off_t.shape()[0] != N) ctx.fail("offset ", off_t.shape().to_string(), " does not match");
  const int64_t MG = M / group, CO = C / og, taps = KH * KW;
  auto at = [&](const double *img, int64_t r, int64_t c) {
    return (r >= 0 && r < H && c >= 0 && c < W) ? img[r * W + c] : 0.0;
  };
  std::vector<double> yv(static_cast<size_t>(y.numel()), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / MG;
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = bv.empty() ? 0.0 : bv[size_t(m)];
          for (int64_t cc = 0; cc < CG; ++cc) {
            const int64_t c = g * CG + cc, o = c / CO;
            const double *img = &xv[size_t((n * C + c) * H * W)];
            for (int64_t u = 0; u < KH; ++u)
              for (int64_t v = 0; v < KW; ++v) {
                const int64_t t = u * KW + v;
                const size_t oi = size_t((((n * og + o) * taps + t) * 2) * OH * OW + i * OW + j);
                const double dy = ov[oi], dx = ov[oi + size_t(OH * OW)];
                const double mask =
                    mv.empty() ? 1.0 : mv[size_t(((n * og + o) * taps + t) * OH * OW + i * OW + j)];
                const double py = double(i * s[0] - p[0] + u * d[0]) + dy;
                const double px = double(j * s[1] - p[1] + v * d[1]) + dx;
                double val = 0;
                if (py > -1 && py < double(H) && px > -1 && px < double(W)) {  // NaN: outside
                  const double fy = std::floor(py), fx = std::floor(px);
                  const int64_t y0 = int64_t(fy), x0 = int64_t(fx);
                  const double ly = py - fy, lx = px - fx;
                  val = (1 - ly) * (1 - lx) * at(img, y0, x0) +
                        (1 - ly) * lx * at(img, y0, x0 + 1) + ly * (1 - lx) * at(img, y0 + 1, x0) +
                        ly * lx * at(img, y0 + 1, x0 + 1);
                }
                acc += wv[size_t(((m * CG + cc) * KH + u) * KW + v)] * mask * val;
              }
          }
          yv[size_t(((n * M + m) * OH + i) * OW + j)] = acc;
        }
    }
  from_f64(ctx, y, yv);
}

LUMEN_REGISTER_KERNEL("reference", "deform_conv", deform_conv, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace
}  // namespace lumen
