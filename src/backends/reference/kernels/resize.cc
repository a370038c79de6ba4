// Reference resize: ONNX Resize as a sequence of 1-D resamplings, one per resized axis, in
// double. For every output coordinate along an axis: map it to a source coordinate x (the
// coordinate_transformation_mode), take the fractional part as the ratio (1 when x is an
// integer), ask the mode for its n weights, pick the n source positions around x, clamp them to
// the axis (edge padding) and sum. Shapes and attributes were checked by inference; the output
// tensor holds the output shape.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen {
namespace {

struct Options {
  std::string mode, ctm, nearest_mode;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

// The interpolation weights for a source coordinate with fractional part `ratio` (in (0, 1]).
std::vector<double> coeffs(const Options &o, double ratio, double scale) {
  if (o.mode == "nearest") {
    if (ratio == std::floor(ratio)) return {0, 1};
    const std::string &m = o.nearest_mode;
    if (m == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m == "floor") return {1, 0};
    if (m == "ceil") return {0, 1};
    return {double(ratio <= 0.5), double(ratio > 0.5)};  // round_prefer_floor
  }
  if (o.mode == "linear") {
    if (!o.antialias) return {1 - ratio, ratio};
    const double s = std::min(scale, 1.0);
    const int64_t start = int64_t(std::floor(-1 / s)) + 1;
    const int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      const double w = std::clamp(1 - std::abs((double(i) - ratio) * s), 0.0, 1.0);
      c.push_back(w);
      sum += w;
    }
    for (double &w : c) w /= sum;
    return c;
  }
  const double a = o.cubic_a;
  if (!o.antialias) {
    const double r = ratio, t = 1 - ratio;
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a};
  }
  const double s = std::min(scale, 1.0);
  const int64_t start = int64_t(std::floor(-2 / s)) + 1, end = 2 - start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    const double x = std::abs(s * (double(i) - ratio));
    double w = 0;
    if (x <= 1)
      w = (a + 2) * x * x * x - (a + 3) * x * x + 1;
    else if (x < 2)
      w = a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    c.push_back(w);
    sum += w;
  }
  for (double &w : c) w /= sum;
  return c;
}

// Resamples `data` (dims) along `axis` to `out_w` positions.
std::vector<double> resize_axis(const std::vector<double> &data, std::vector<int64_t> &dims,
                                size_t axis, double scale, int64_t out_w, const double *roi,
                                const Options &o) {
  const int64_t in_w = dims[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<double> out(static_cast<size_t>(outer * out_w * inner));
  const double out_f = scale * double(in_w);  // the real-valued output width
  for (int64_t y = 0; y < out_w; ++y) {
    double x = 0;
    bool extrapolated = false;
    const double yd = double(y);
    if (o.ctm == "align_corners") {
      x = out_f == 1 ? 0.0 : yd * double(in_w - 1) / (out_f - 1);
    } else if (o.ctm == "asymmetric") {
      x = yd / scale;
    } else if (o.ctm == "tf_crop_and_resize") {
      x = out_f == 1 ? (roi[1] - roi[0]) * double(in_w - 1) / 2
                     : yd * (roi[1] - roi[0]) * double(in_w - 1) / (out_f - 1);
      x += roi[0] * double(in_w - 1);
      extrapolated = x < 0 || x > double(in_w - 1);
    } else if (o.ctm == "pytorch_half_pixel") {
      x = out_f == 1 ? -0.5 : (yd + 0.5) / scale - 0.5;
    } else if (o.ctm == "half_pixel_symmetric") {
      const double adjustment = double(out_w) / out_f;
      const double offset = double(in_w) / 2 * (1 - adjustment);
      x = offset + (yd + 0.5) / scale - 0.5;
    } else {
      x = (yd + 0.5) / scale - 0.5;  // half_pixel
    }
    const double fl = std::floor(x);
    const double ratio = x == fl ? 1.0 : x - fl;
    std::vector<double> c = coeffs(o, ratio, scale);
    const int64_t n = int64_t(c.size());
    const double frac = x - fl;
    int64_t off;
    if (n % 2 == 0)
      off = frac == 0 ? -(n / 2) : -(n / 2) + 1;
    else
      off = frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    const int64_t start = int64_t(fl) + off;
    if (o.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t idx = start + k;
        if (idx < 0 || idx >= in_w) c[k] = 0;
        sum += c[k];
      }
      if (sum == 0) sum = 1;
      for (double &w : c) w /= sum;
    }
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        double acc = 0;
        if (extrapolated) {
          acc = o.extrapolation;
        } else {
          for (int64_t k = 0; k < n; ++k) {
            const int64_t idx = std::clamp<int64_t>(start + k, 0, in_w - 1);
            acc += c[k] * data[(a * in_w + idx) * inner + i];
          }
        }
        out[(a * out_w + y) * inner + i] = acc;
      }
  }
  dims[axis] = out_w;
  return out;
}

std::vector<double> input_doubles(const KernelContext &ctx, size_t i) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return {};
  return to_f64(ctx, ctx.input(i));
}

void resize(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.shape().rank();
  Options o;
  o.mode = ctx.attrs.get_string("mode", "nearest");
  o.ctm = ctx.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  o.nearest_mode = ctx.attrs.get_string("nearest_mode", "round_prefer_floor");
  o.cubic_a = ctx.attrs.get_float("cubic_coeff_a", -0.75);
  o.extrapolation = ctx.attrs.get_float("extrapolation_value", 0.0);
  o.exclude_outside = ctx.attrs.get_int("exclude_outside", 0) != 0;
  o.antialias = ctx.attrs.get_int("antialias", 0) != 0;
  const std::string policy = ctx.attrs.get_string("keep_aspect_ratio_policy", "stretch");

  std::vector<int64_t> axes;
  if (ctx.attrs.has("axes")) {
    for (int64_t a : ctx.attrs.get_ints("axes", {})) axes.push_back(a < 0 ? a + int64_t(rank) : a);
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(int64_t(a));
  }
  const size_t n = axes.size();
  const std::vector<double> roi_in = input_doubles(ctx, 1);
  const std::vector<double> scales_in = input_doubles(ctx, 2);
  // Per-axis scale and roi over all dims.
  std::vector<double> scale(rank, 1.0), roi(2 * rank);
  for (size_t d = 0; d < rank; ++d) roi[d] = 0, roi[rank + d] = 1;
  if (roi_in.size() == 2 * n)
    for (size_t i = 0; i < n; ++i) roi[axes[i]] = roi_in[i], roi[rank + axes[i]] = roi_in[n + i];
  if (!scales_in.empty()) {
    if (scales_in.size() != n) ctx.fail("scales must have ", n, " values");
    for (size_t i = 0; i < n; ++i) scale[axes[i]] = scales_in[i];
  } else {
    double common = policy == "not_larger" ? INFINITY : 0.0;
    for (size_t i = 0; i < n; ++i) {
      const size_t a = size_t(axes[i]);
      // With sizes, the scale is sizes / in; the output holds the sizes (stretch).
      const Tensor &sizes = ctx.input(3);
      const int64_t s =
          sizes.dtype() == DType::Int32 ? sizes.data<int32_t>()[i] : sizes.data<int64_t>()[i];
      scale[a] = double(s) / double(x.shape()[a]);
      common = policy == "not_larger" ? std::min(common, scale[a]) : std::max(common, scale[a]);
    }
    if (policy != "stretch")
      for (size_t i = 0; i < n; ++i) scale[size_t(axes[i])] = common;
  }

  std::vector<int64_t> dims = x.shape().dims();
  std::vector<double> data = to_f64(ctx, x);
  for (size_t i = 0; i < n; ++i) {
    const size_t a = size_t(axes[i]);
    const int64_t out_w = y.shape()[a];
    if (std::abs(scale[a] - 1.0) <= 1e-9 && out_w == dims[a] && std::abs(roi[a]) <= 1e-9 &&
        std::abs(roi[a + rank] - 1.0) <= 1e-9)
      continue;
    if (out_w > 0 && dims[a] == 0) ctx.fail("cannot resize an empty axis ", a, " to ", out_w);
    if (out_w == 0 || data.empty()) {
      dims[a] = out_w;
      data.assign(size_t(Shape(dims).numel()), 0.0);
      continue;
    }
    const double r[2] = {roi[a], roi[a + rank]};
    data = resize_axis(data, dims, a, scale[a], out_w, r, o);
  }
  from_f64(ctx, y, data);
}

LUMEN_REGISTER_KERNEL("reference", "resize", resize, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace
}  // namespace lumen
