// resize (ONNX Resize 10-19 and Upsample): separable interpolation of a tensor.
//   inputs: x, roi (optional, float [2 * n] as [starts..., ends...] over the resized axes),
//     scales (optional, float [n]), sizes (optional, int64 [n]); exactly one of scales and sizes
//     is given (an empty tensor counts as absent). n is the rank, or len(axes) when axes is set.
//   attrs (ONNX names): mode nearest|linear|cubic, coordinate_transformation_mode
//     (half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize,
//     half_pixel_symmetric), nearest_mode (round_prefer_floor, round_prefer_ceil, floor, ceil),
//     cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0, antialias=0, axes,
//     keep_aspect_ratio_policy stretch|not_larger|not_smaller.
//   Output dims: from scales, floor(scale * in); from sizes, the sizes (with a keep-aspect policy,
//     round(scale * in) with one scale for all resized axes).
// When scales/sizes are not known yet (graph inputs), the output shape is left to run time.
#include <cmath>
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

std::vector<double> float_values(const InferContext &ctx, size_t i, const char *what) {
  const Tensor *t = ctx.value(i);
  std::vector<double> out;
  if (t->dtype() == DType::Float32)
    for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->data<float>()[k]);
  else if (t->dtype() == DType::Float64)
    for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->data<double>()[k]);
  else
    ctx.fail(what, " must be float32 or float64, got ", dtype_name(t->dtype()));
  return out;
}

std::vector<TensorType> infer_resize(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  const size_t rank = x.shape.rank();
  const std::string mode = ctx.attrs.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    ctx.fail("unsupported mode '", mode, "'");
  const std::string ctm = ctx.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" &&
      ctm != "asymmetric" && ctm != "tf_crop_and_resize" && ctm != "half_pixel_symmetric")
    ctx.fail("unsupported coordinate_transformation_mode '", ctm, "'");
  const std::string nm = ctx.attrs.get_string("nearest_mode", "round_prefer_floor");
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    ctx.fail("unsupported nearest_mode '", nm, "'");
  const std::string policy = ctx.attrs.get_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail("unsupported keep_aspect_ratio_policy '", policy, "'");
  if (mode == "nearest" && ctx.attrs.get_int("antialias", 0) != 0)
    ctx.fail("antialias is not supported with mode 'nearest'");

  std::vector<int64_t> axes;
  if (ctx.attrs.has("axes")) {
    for (int64_t a : ctx.attrs.get_ints("axes", {})) {
      const int64_t na = a < 0 ? a + int64_t(rank) : a;
      if (na < 0 || na >= int64_t(rank)) ctx.fail("axis ", a, " is out of range for rank ", rank);
      for (int64_t b : axes)
        if (b == na) ctx.fail("axes has a repeated axis ", a);
      axes.push_back(na);
    }
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(int64_t(a));
  }
  const size_t n = axes.size();

  // Present and non-empty: empty tensors stand for omitted inputs.
  auto given = [&](size_t i) {
    return ctx.has_input(i) && !(ctx.input(i).shape.rank() == 1 && ctx.input(i).shape[0] == 0);
  };
  const bool has_scales = given(2), has_sizes = given(3);
  if (has_scales == has_sizes) {
    // With unknown input lengths at build time, decide at run time.
    auto maybe_empty = [&](size_t i) {
      return ctx.has_input(i) && ctx.input(i).shape.rank() == 1 &&
             ctx.input(i).shape[0] == kUnknownDim;
    };
    if (!(maybe_empty(2) || maybe_empty(3)))
      ctx.fail("exactly one of scales and sizes must be given");
    ctx.defer({x.dtype});
  }
  if (ctm == "tf_crop_and_resize" && !given(1))
    ctx.fail("coordinate_transformation_mode 'tf_crop_and_resize' needs roi");
  if (given(1) && ctx.value(1)) {
    if (ctx.value(1)->numel() != int64_t(2 * n))
      ctx.fail("roi must have ", 2 * n, " values, got shape ", ctx.input(1).shape.to_string());
  }

  Shape out = x.shape;
  if (has_scales) {
    if (!ctx.value(2)) ctx.defer({x.dtype});
    const std::vector<double> scales = float_values(ctx, 2, "scales");
    if (scales.size() != n) ctx.fail("scales must have ", n, " values, got ", scales.size());
    for (size_t i = 0; i < n; ++i) {
      if (!(scales[i] > 0)) ctx.fail("scales must be > 0, got ", scales[i]);
      const int64_t in = x.shape[axes[i]];
      if (in == kUnknownDim) continue;
      const double o = std::floor(scales[i] * double(in));
      if (!(o < 9e18)) ctx.fail("output size overflows for scale ", scales[i]);
      out[axes[i]] = int64_t(o);
    }
  } else {
    const auto sizes = ctx.int_values(3);
    if (!sizes) ctx.defer({x.dtype});
    if (sizes->size() != n) ctx.fail("sizes must have ", n, " values, got ", sizes->size());
    for (int64_t s : *sizes)
      if (s < 0) ctx.fail("sizes must be >= 0, got ", s);
    if (policy == "stretch") {
      for (size_t i = 0; i < n; ++i) out[axes[i]] = (*sizes)[i];
    } else {
      double scale = policy == "not_larger" ? INFINITY : 0.0;
      bool all_known = true;
      for (size_t i = 0; i < n; ++i) {
        const int64_t in = x.shape[axes[i]];
        if (in == kUnknownDim) {
          all_known = false;
          continue;
        }
        if (in == 0) ctx.fail("cannot keep the aspect ratio of an empty axis");
        const double s = double((*sizes)[i]) / double(in);
        scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
      }
      for (size_t i = 0; i < n; ++i) {
        const int64_t in = x.shape[axes[i]];
        out[axes[i]] = all_known ? int64_t(scale * double(in) + 0.5) : kUnknownDim;
      }
    }
  }
  return {{x.dtype, out}};
}

LUMEN_REGISTER_OP({.name = "resize", .min_inputs = 1, .max_inputs = 4, .infer = infer_resize});

}  // namespace
}  // namespace lumen
