// grid_sample (ONNX GridSample 16/20): samples an N-d input at normalized grid locations.
//   inputs: x [N, C, D1, ..., Dr] (float), grid [N, O1, ..., Or, r] (float; the last dim lists
//     coordinates in reverse dimension order: x (width) first).
//   attrs: mode linear|nearest|cubic, padding_mode zeros|border|reflection, align_corners 0|1.
//   output: [N, C, O1, ..., Or], the dtype of x.
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

std::vector<TensorType> infer_grid_sample(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &grid = ctx.input(1);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (!is_float(grid.dtype))
    ctx.fail("grid dtype ", dtype_name(grid.dtype), " is not supported (floating point only)");
  const std::string mode = ctx.attrs.get_string("mode", "linear");
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    ctx.fail("unsupported mode '", mode, "'");
  const std::string pad = ctx.attrs.get_string("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    ctx.fail("unsupported padding_mode '", pad, "'");
  const size_t rank = x.shape.rank();
  if (rank < 3) ctx.fail("input must have rank >= 3, got shape ", x.shape.to_string());
  const size_t r = rank - 2;
  if (grid.shape.rank() != rank)
    ctx.fail("grid must have rank ", rank, ", got shape ", grid.shape.to_string());
  if (grid.shape[rank - 1] != kUnknownDim && grid.shape[rank - 1] != int64_t(r))
    ctx.fail("grid's last dim must be ", r, ", got shape ", grid.shape.to_string());
  if (x.shape[0] != kUnknownDim && grid.shape[0] != kUnknownDim && x.shape[0] != grid.shape[0])
    ctx.fail("batch sizes differ: input ", x.shape.to_string(), ", grid ", grid.shape.to_string());
  std::vector<int64_t> out{x.shape[0] == kUnknownDim ? grid.shape[0] : x.shape[0], x.shape[1]};
  for (size_t i = 0; i < r; ++i) out.push_back(grid.shape[1 + i]);
  return {{x.dtype, Shape(out)}};
}

LUMEN_REGISTER_OP(
    {.name = "grid_sample", .min_inputs = 2, .max_inputs = 2, .infer = infer_grid_sample});

// affine_grid (ONNX AffineGrid 20): the sampling grid of an affine transform.
//   inputs: theta [N, 2, 3] or [N, 3, 4] (float), size (int64 [4] = N, C, H, W or [5] = N, C, D,
//     H, W). attrs: align_corners 0|1. output: [N, H, W, 2] or [N, D, H, W, 3], theta's dtype.
std::vector<TensorType> infer_affine_grid(const InferContext &ctx) {
  const TensorType &theta = ctx.input(0), &size = ctx.input(1);
  if (!is_float(theta.dtype))
    ctx.fail("theta dtype ", dtype_name(theta.dtype), " is not supported (floating point only)");
  if (size.dtype != DType::Int64 && size.dtype != DType::Int32)
    ctx.fail("size must be int64, got ", dtype_name(size.dtype));
  if (theta.shape.rank() != 3)
    ctx.fail("theta must be [N, 2, 3] or [N, 3, 4], got ", theta.shape.to_string());
  const auto sz = ctx.int_values(1);
  if (!sz) ctx.defer({theta.dtype});
  if (sz->size() != 4 && sz->size() != 5)
    ctx.fail("size must have 4 or 5 values, got ", sz->size());
  const int64_t r = int64_t(sz->size()) - 2;
  for (int64_t v : *sz)
    if (v < 0) ctx.fail("size values must be >= 0, got ", v);
  const auto &t = theta.shape;
  if ((t[1] != kUnknownDim && t[1] != r) || (t[2] != kUnknownDim && t[2] != r + 1) ||
      (t[0] != kUnknownDim && t[0] != (*sz)[0]))
    ctx.fail("theta ", t.to_string(), " does not match size [", (*sz)[0], ", ", r, ", ", r + 1,
             "]");
  std::vector<int64_t> out{(*sz)[0]};
  for (int64_t d = 0; d < r; ++d) out.push_back((*sz)[size_t(2 + d)]);
  out.push_back(r);
  return {{theta.dtype, Shape(out)}};
}

LUMEN_REGISTER_OP(
    {.name = "affine_grid", .min_inputs = 2, .max_inputs = 2, .infer = infer_affine_grid});

// roi_align (ONNX RoiAlign 10/16/22): bilinear-sampled average or max pooling over regions.
//   inputs: x [N, C, H, W] (float), rois [R, 4] (x1, y1, x2, y2; x's dtype), batch_indices
//     (int64 [R]). attrs: mode avg|max, output_height=1, output_width=1, sampling_ratio=0,
//     spatial_scale=1, coordinate_transformation_mode half_pixel|output_half_pixel.
//   output: [R, C, output_height, output_width].
std::vector<TensorType> infer_roi_align(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &rois = ctx.input(1), &idx = ctx.input(2);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (rois.dtype != x.dtype)
    ctx.fail("rois must have the input's dtype ", dtype_name(x.dtype), ", got ",
             dtype_name(rois.dtype));
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    ctx.fail("batch_indices must be int64, got ", dtype_name(idx.dtype));
  if (x.shape.rank() != 4) ctx.fail("input must be 4-D, got ", x.shape.to_string());
  if (rois.shape.rank() != 2 || (rois.shape[1] != kUnknownDim && rois.shape[1] != 4))
    ctx.fail("rois must be [R, 4], got ", rois.shape.to_string());
  if (idx.shape.rank() != 1 || (idx.shape[0] != kUnknownDim && rois.shape[0] != kUnknownDim &&
                                idx.shape[0] != rois.shape[0]))
    ctx.fail("batch_indices ", idx.shape.to_string(), " must be [R] for rois ",
             rois.shape.to_string());
  const std::string mode = ctx.attrs.get_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("unsupported mode '", mode, "'");
  const std::string ctm = ctx.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.fail("unsupported coordinate_transformation_mode '", ctm, "'");
  const int64_t oh = ctx.attrs.get_int("output_height", 1),
                ow = ctx.attrs.get_int("output_width", 1);
  if (oh < 1 || ow < 1) ctx.fail("output_height and output_width must be >= 1, got ", oh, ", ", ow);
  if (ctx.attrs.get_int("sampling_ratio", 0) < 0)
    ctx.fail("sampling_ratio must be >= 0, got ", ctx.attrs.get_int("sampling_ratio", 0));
  return {{x.dtype, Shape{rois.shape[0], x.shape[1], oh, ow}}};
}

LUMEN_REGISTER_OP(
    {.name = "roi_align", .min_inputs = 3, .max_inputs = 3, .infer = infer_roi_align});

// deform_conv (ONNX DeformConv 19/22), 2-D: a convolution whose taps sample x (bilinearly,
// zeros outside) at positions moved by per-pixel offsets, optionally scaled by a mask.
//   inputs: x [N, C, H, W], w [M, C / group, kH, kW], offset [N, G * kH * kW * 2, oH, oW]
//     ((dy, dx) per tap), b (optional, [M]), mask (optional, [N, G * kH * kW, oH, oW]).
//   attrs: dilations, group=1, kernel_shape, offset_group G=1, pads [t, l, b, r], strides.
//   output: [N, M, oH, oW].
std::vector<TensorType> infer_deform_conv(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &w = ctx.input(1), &off = ctx.input(2);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  for (size_t i = 1; i < 5; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != x.dtype)
      ctx.fail("input ", i, " must have the input's dtype ", dtype_name(x.dtype), ", got ",
               dtype_name(ctx.input(i).dtype));
  if (x.shape.rank() != 4)
    ctx.fail("only 2-D deformable convolution is supported, got input ", x.shape.to_string());
  if (w.shape.rank() != 4 || off.shape.rank() != 4)
    ctx.fail("weights and offset must be 4-D, got ", w.shape.to_string(), " and ",
             off.shape.to_string());
  const int64_t group = ctx.attrs.get_int("group", 1), og = ctx.attrs.get_int("offset_group", 1);
  if (group < 1 || og < 1) ctx.fail("group and offset_group must be >= 1");
  std::vector<int64_t> k = ctx.attrs.get_ints("kernel_shape", {w.shape[2], w.shape[3]});
  const std::vector<int64_t> s = ctx.attrs.get_ints("strides", {1, 1});
  const std::vector<int64_t> d = ctx.attrs.get_ints("dilations", {1, 1});
  const std::vector<int64_t> p = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || p.size() != 4)
    ctx.fail("kernel_shape, strides, dilations need 2 values and pads 4");
  for (int64_t v : {k[0], k[1], s[0], s[1], d[0], d[1]})
    if (v < 1) ctx.fail("kernel_shape, strides and dilations must be >= 1");
  for (int64_t v : p)
    if (v < 0) ctx.fail("pads must be >= 0");
  const int64_t C = x.shape[1], M = w.shape[0];
  if (C != kUnknownDim && w.shape[1] != kUnknownDim &&
      (C != w.shape[1] * group || (M != kUnknownDim && M % group != 0) || C % og != 0))
    ctx.fail("input ", x.shape.to_string(), ", weights ", w.shape.to_string(), ", group ", group,
             " and offset_group ", og, " do not match");
  if (w.shape[2] != k[0] || w.shape[3] != k[1])
    ctx.fail("weights ", w.shape.to_string(), " do not match kernel_shape");
  if (off.shape[1] != kUnknownDim && off.shape[1] != og * k[0] * k[1] * 2)
    ctx.fail("offset ", off.shape.to_string(), " must have ", og * k[0] * k[1] * 2, " channels");
  std::vector<int64_t> out{x.shape[0], M};
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.shape[2 + i];
    if (in == kUnknownDim) {
      out.push_back(kUnknownDim);
      continue;
    }
    const int64_t span = (k[i] - 1) * d[i] + 1, padded = in + p[i] + p[i + 2];
    if (padded < span) ctx.fail("kernel does not fit the padded input ", x.shape.to_string());
    out.push_back((padded - span) / s[i] + 1);
  }
  if (off.shape[2] != kUnknownDim && out[2] != kUnknownDim &&
      (off.shape[2] != out[2] || off.shape[3] != out[3]))
    ctx.fail("offset ", off.shape.to_string(), " does not match the output size ", out[2], "x",
             out[3]);
  if (ctx.has_input(3) && ctx.input(3).shape.numel() != M && M != kUnknownDim)
    ctx.fail("bias must have ", M, " values, got ", ctx.input(3).shape.to_string());
  if (ctx.has_input(4)) {
    const Shape &m = ctx.input(4).shape;
    if (m.rank() != 4 || (m[1] != kUnknownDim && m[1] != og * k[0] * k[1]))
      ctx.fail("mask must be [N, ", og * k[0] * k[1], ", oH, oW], got ", m.to_string());
  }
  return {{x.dtype, Shape(out)}};
}

LUMEN_REGISTER_OP(
    {.name = "deform_conv", .min_inputs = 3, .max_inputs = 5, .infer = infer_deform_conv});

}  // namespace
}  // namespace lumen
