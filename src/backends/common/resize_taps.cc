#include "backends/common/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/common/f64_io.h"

namespace lumen {
namespace {

// The interpolation weights for a source coordinate with fractional part `ratio` (in (0, 1]).
std::vector<double> coeffs(const ResizeOptions &o, double ratio, double scale) {
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

std::vector<double> input_values(const KernelContext &ctx, size_t i) {
  if (!ctx.has_input(i)) return {};
  return to_f64(ctx, ctx.input(i).contiguous());
}

}  // namespace

ResizeOptions ResizeOptions::from(const Attributes &attrs) {
  ResizeOptions o;
  o.mode = attrs.get_string("mode", "nearest");
  o.ctm = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  o.nearest_mode = attrs.get_string("nearest_mode", "round_prefer_floor");
  o.policy = attrs.get_string("keep_aspect_ratio_policy", "stretch");
  o.cubic_a = attrs.get_float("cubic_coeff_a", -0.75);
  o.extrapolation = attrs.get_float("extrapolation_value", 0.0);
  o.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  o.antialias = attrs.get_int("antialias", 0) != 0;
  return o;
}

ResizeGeometry resize_geometry(const KernelContext &ctx, const ResizeOptions &o) {
  const Tensor &x = ctx.input(0);
  const size_t rank = x.shape().rank();
  ResizeGeometry g;
  if (ctx.attrs.has("axes")) {
    for (int64_t a : ctx.attrs.get_ints("axes", {}))
      g.axes.push_back(a < 0 ? a + int64_t(rank) : a);
  } else {
    for (size_t a = 0; a < rank; ++a) g.axes.push_back(int64_t(a));
  }
  const size_t n = g.axes.size();
  g.scale.assign(rank, 1.0);
  g.roi_start.assign(rank, 0.0);
  g.roi_end.assign(rank, 1.0);
  const std::vector<double> roi = ctx.has_input(1) ? input_values(ctx, 1) : std::vector<double>{};
  if (roi.size() == 2 * n)
    for (size_t i = 0; i < n; ++i)
      g.roi_start[g.axes[i]] = roi[i], g.roi_end[g.axes[i]] = roi[n + i];
  const std::vector<double> scales = input_values(ctx, 2);
  if (!scales.empty()) {
    if (scales.size() != n) ctx.fail("scales must have ", n, " values");
    for (size_t i = 0; i < n; ++i) g.scale[g.axes[i]] = scales[i];
    return g;
  }
  // With sizes, the scale is sizes / in; the output holds the sizes (stretch).
  const std::vector<double> sizes = input_values(ctx, 3);
  if (sizes.size() != n) ctx.fail("sizes must have ", n, " values");
  double common = o.policy == "not_larger" ? INFINITY : 0.0;
  for (size_t i = 0; i < n; ++i) {
    const size_t a = size_t(g.axes[i]);
    g.scale[a] = sizes[i] / double(x.shape()[a]);
    common = o.policy == "not_larger" ? std::min(common, g.scale[a]) : std::max(common, g.scale[a]);
  }
  if (o.policy != "stretch")
    for (size_t i = 0; i < n; ++i) g.scale[size_t(g.axes[i])] = common;
  return g;
}

AxisTaps resize_taps(const ResizeOptions &o, int64_t in_w, int64_t out_w, double scale,
                     double roi_start, double roi_end) {
  AxisTaps t;
  t.identity = std::abs(scale - 1.0) <= 1e-9 && out_w == in_w && std::abs(roi_start) <= 1e-9 &&
               std::abs(roi_end - 1.0) <= 1e-9;
  if (t.identity || out_w == 0 || in_w == 0) return t;
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
      x = out_f == 1 ? (roi_end - roi_start) * double(in_w - 1) / 2
                     : yd * (roi_end - roi_start) * double(in_w - 1) / (out_f - 1);
      x += roi_start * double(in_w - 1);
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
    const auto n = int64_t(c.size());
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
        if (start + k < 0 || start + k >= in_w) c[size_t(k)] = 0;
        sum += c[size_t(k)];
      }
      if (sum == 0) sum = 1;
      for (double &w : c) w /= sum;
    }
    if (t.taps == 0) t.taps = n;
    if (n != t.taps) fail("resize: ", n, " taps after ", t.taps);  // antialias sizes are fixed
    for (int64_t k = 0; k < n; ++k) {
      t.index.push_back(std::clamp<int64_t>(start + k, 0, in_w - 1));
      t.weight.push_back(c[size_t(k)]);
    }
    t.extrapolated.push_back(extrapolated);
  }
  return t;
}

Tensor taps_table(const AxisTaps &taps, int64_t out_w) {
  const int64_t stride = 2 * taps.taps + 1;
  Tensor table = Tensor::empty(Shape{out_w * stride}, DType::Int32);
  auto *words = table.data<int32_t>();
  for (int64_t o = 0; o < out_w; ++o) {
    int32_t *row = words + o * stride;
    for (int64_t k = 0; k < taps.taps; ++k) {
      row[k] = static_cast<int32_t>(taps.index[o * taps.taps + k]);
      const float w = static_cast<float>(taps.weight[o * taps.taps + k]);
      std::memcpy(&row[taps.taps + k], &w, sizeof w);
    }
    row[2 * taps.taps] = taps.extrapolated[o];
  }
  return table;
}

std::vector<ResizePass> device_resize_passes(const KernelContext &ctx,
                                             const ResizeOptions &options) {
  const Tensor &x = ctx.input(0);
  KernelContext host{.inputs = {&x},
                     .outputs = ctx.outputs,
                     .attrs = ctx.attrs,
                     .pool = ctx.pool,
                     .op = ctx.op,
                     .node = ctx.node};
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const Tensor *param = ctx.has_input(i) ? ctx.host_input(i) : nullptr;
    if (ctx.has_input(i) && !param)
      ctx.fail("input ", i, " (roi, scales or sizes) must be computed on the host, not the device");
    host.inputs.push_back(param);
  }
  const ResizeGeometry geometry = resize_geometry(host, options);
  std::vector<ResizePass> passes;
  for (int64_t axis : geometry.axes) {
    const auto a = static_cast<size_t>(axis);
    AxisTaps taps = resize_taps(options, x.shape()[a], ctx.output(0).shape()[a], geometry.scale[a],
                                geometry.roi_start[a], geometry.roi_end[a]);
    if (!taps.identity) passes.push_back({a, std::move(taps)});
  }
  return passes;
}

}  // namespace lumen
