// N-d convolution and pooling (any number k >= 1 of spatial dims), ONNX semantics. The 2-D ops
// in conv.cc/pool.cc are the fast path; these are the general ones the importer uses for 1-D,
// 3-D and the features the 2-D ops lack.
//   conv_nd: x [N, C, d...], w [M, C/group, k...], bias [M] (optional); attrs strides, pads
//     ([begins..., ends...]), dilations, group.
//     out = floor((in + pad_begin + pad_end - ((k - 1) * dilation + 1)) / stride) + 1.
//   conv_transpose: x [N, C, d...], w [C, M/group, k...], bias [M] (optional); attrs strides,
//     pads, dilations, group, output_padding.
//     out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end,
//     or the attribute output_shape (spatial dims) when given. Pads may be negative here (the
//     importer derives them from ONNX's output_shape).
//   max_pool_nd (2 outputs: values, int64 indices into the flattened input, row-major or, with
//     storage_order=1, column-major over the spatial dims), avg_pool_nd (count_include_pad),
//     lp_pool (p=2): x [N, C, d...]; attrs kernel_shape (required), strides, pads, dilations,
//     ceil_mode. out as for conv, rounded up with ceil_mode, less one when the last window would
//     start in the end padding.
//   max_unpool: x [N, C, d...], indices (int64, x's shape), output_shape (optional int64 input,
//     the full output shape); attrs kernel_shape, strides, pads.
//     Default out = (in - 1) * stride + k - pad_begin - pad_end.
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool known(int64_t d) {
  return d != kUnknownDim;
}

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

struct Spatial {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

// Reads and checks the spatial attributes for k spatial dims.
Spatial spatial_attrs(const InferContext &ctx, size_t k, std::vector<int64_t> kernel,
                      bool negative_pads = false) {
  Spatial s;
  s.kernel = std::move(kernel);
  s.strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(k, 1));
  s.dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(k, 1));
  s.pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (s.kernel.size() != k || s.strides.size() != k || s.dilations.size() != k ||
      s.pads.size() != 2 * k)
    ctx.fail("kernel_shape/strides/dilations need ", k, " values and pads ", 2 * k,
             " for an input with ", k, " spatial dims");
  for (size_t i = 0; i < k; ++i) {
    if (s.kernel[i] <= 0) ctx.fail("kernel dims must be > 0, got ", Shape(s.kernel).to_string());
    if (s.strides[i] <= 0) ctx.fail("strides must be > 0, got ", Shape(s.strides).to_string());
    if (s.dilations[i] <= 0)
      ctx.fail("dilations must be > 0, got ", Shape(s.dilations).to_string());
    if (!negative_pads && (s.pads[i] < 0 || s.pads[i + k] < 0))
      ctx.fail("pads must be >= 0, got ", Shape(s.pads).to_string());
  }
  return s;
}

int64_t extent(const Spatial &s, size_t i) {
  return checked_add(checked_mul(s.kernel[i] - 1, s.dilations[i]), 1);
}

int64_t window_out(const InferContext &ctx, const Spatial &s, size_t i, int64_t in, bool ceil,
                   const Shape &x) {
  if (!known(in)) return kUnknownDim;
  const size_t k = s.kernel.size();
  const int64_t span = checked_add(in, checked_add(s.pads[i], s.pads[i + k])) - extent(s, i);
  if (span < 0)
    ctx.fail("the window (", extent(s, i), ") is larger than the padded input along spatial dim ",
             i, " (input ", x.to_string(), ", pads ", Shape(s.pads).to_string(), ")");
  const int64_t st = s.strides[i];
  int64_t out = (ceil ? (span + st - 1) / st : span / st) + 1;
  if (ceil && (out - 1) * st >= in + s.pads[i]) --out;
  return out;
}

const TensorType &spatial_input(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.shape.rank() < 3)
    ctx.fail("input must be [N, C, spatial...] with rank >= 3, got ", x.shape.to_string());
  return x;
}

void check_bias(const InferContext &ctx, int64_t m, const TensorType &x) {
  if (!ctx.has_input(2)) return;
  const TensorType &b = ctx.input(2);
  if (b.dtype != x.dtype) ctx.fail("bias must have the input's dtype ", dtype_name(x.dtype));
  if (b.shape.rank() != 1 || (known(m) && known(b.shape[0]) && b.shape[0] != m))
    ctx.fail("bias must be [", m, "], got ", b.shape.to_string());
}

std::vector<TensorType> infer_conv_nd(const InferContext &ctx) {
  const TensorType &x = spatial_input(ctx), &w = ctx.input(1);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (w.dtype != x.dtype) ctx.fail("weight must have the input's dtype ", dtype_name(x.dtype));
  const size_t k = x.shape.rank() - 2;
  if (w.shape.rank() != k + 2)
    ctx.fail("weight ", w.shape.to_string(), " must have the input's rank ", x.shape.rank());
  const int64_t group = ctx.attrs.get_int("group", 1);
  if (group <= 0) ctx.fail("group must be > 0, got ", group);
  std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
  for (int64_t d : kernel)
    if (!known(d)) ctx.fail("the weight's kernel dims must be known, got ", w.shape.to_string());
  const Spatial s = spatial_attrs(ctx, k, kernel);
  const int64_t c = x.shape[1], m = w.shape[0];
  if (known(c) && c % group != 0) ctx.fail("group ", group, " does not divide C = ", c);
  if (known(m) && m % group != 0) ctx.fail("group ", group, " does not divide M = ", m);
  if (known(c) && known(w.shape[1]) && w.shape[1] * group != c)
    ctx.fail("weight ", w.shape.to_string(), " expects ", w.shape[1] * group,
             " input channels, the input ", x.shape.to_string(), " has ", c);
  check_bias(ctx, m, x);
  std::vector<int64_t> out{x.shape[0], m};
  for (size_t i = 0; i < k; ++i)
    out.push_back(window_out(ctx, s, i, x.shape[i + 2], false, x.shape));
  return {{x.dtype, Shape(out)}};
}

std::vector<TensorType> infer_conv_transpose(const InferContext &ctx) {
  const TensorType &x = spatial_input(ctx), &w = ctx.input(1);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (w.dtype != x.dtype) ctx.fail("weight must have the input's dtype ", dtype_name(x.dtype));
  const size_t k = x.shape.rank() - 2;
  if (w.shape.rank() != k + 2)
    ctx.fail("weight ", w.shape.to_string(), " must have the input's rank ", x.shape.rank());
  const int64_t group = ctx.attrs.get_int("group", 1);
  if (group <= 0) ctx.fail("group must be > 0, got ", group);
  std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
  for (int64_t d : kernel)
    if (!known(d)) ctx.fail("the weight's kernel dims must be known, got ", w.shape.to_string());
  const Spatial s = spatial_attrs(ctx, k, kernel, /*negative_pads=*/true);
  const auto opad = ctx.attrs.get_ints("output_padding", std::vector<int64_t>(k, 0));
  if (opad.size() != k) ctx.fail("output_padding needs ", k, " values");
  const int64_t c = x.shape[1];
  if (known(c) && known(w.shape[0]) && w.shape[0] != c)
    ctx.fail("weight ", w.shape.to_string(), " needs ", c, " input channels (input ",
             x.shape.to_string(), ")");
  if (known(c) && c % group != 0) ctx.fail("group ", group, " does not divide C = ", c);
  const int64_t m = known(w.shape[1]) ? checked_mul(w.shape[1], group) : kUnknownDim;
  check_bias(ctx, m, x);
  std::vector<int64_t> out{x.shape[0], m};
  if (ctx.attrs.has("output_shape")) {
    const auto os = ctx.attrs.get_ints("output_shape", {});
    if (os.size() != k) ctx.fail("output_shape needs ", k, " values, got ", os.size());
    for (int64_t d : os) {
      if (d <= 0) ctx.fail("output_shape must be > 0, got ", Shape(os).to_string());
      out.push_back(d);
    }
    return {{x.dtype, Shape(out)}};
  }
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = x.shape[i + 2];
    if (opad[i] < 0) ctx.fail("output_padding must be >= 0");
    if (!known(in)) {
      out.push_back(kUnknownDim);
      continue;
    }
    const int64_t o = checked_mul(s.strides[i], in > 0 ? in - 1 : 0) + opad[i] + extent(s, i) -
                      s.pads[i] - s.pads[i + k];
    if (in == 0 || o < 0)
      ctx.fail("output size ", o, " along spatial dim ", i, " is not positive (input ",
               x.shape.to_string(), ", pads ", Shape(s.pads).to_string(), ")");
    out.push_back(o);
  }
  return {{x.dtype, Shape(out)}};
}

template <int kind>  // 0 max, 1 avg, 2 lp
std::vector<TensorType> infer_pool_nd(const InferContext &ctx) {
  const TensorType &x = spatial_input(ctx);
  const bool int_ok = kind == 0 && (x.dtype == DType::UInt8 || x.dtype == DType::Int8);
  if (!is_float(x.dtype) && !int_ok)
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  const size_t k = x.shape.rank() - 2;
  if (!ctx.attrs.has("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  const Spatial s = spatial_attrs(ctx, k, ctx.attrs.get_ints("kernel_shape", {}));
  const bool ceil = ctx.attrs.get_int("ceil_mode", 0) != 0;
  if (kind == 2 && ctx.attrs.get_float("p", 2.0) <= 0) ctx.fail("p must be > 0");
  // A window lying in the padding only would have nothing to pool (max: -inf, which an integer
  // type cannot hold): pads smaller than the window, as onnxruntime requires. Found by fuzzing.
  for (size_t i = 0; i < 2 * k; ++i) {
    const int64_t extent = checked_add(checked_mul(s.dilations[i % k], s.kernel[i % k] - 1), 1);
    if (s.pads[i] >= extent)
      ctx.fail("pad ", s.pads[i], " must be smaller than the window extent ", extent);
  }
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  for (size_t i = 0; i < k; ++i)
    out.push_back(window_out(ctx, s, i, x.shape[i + 2], ceil, x.shape));
  if (kind == 0) return {{x.dtype, Shape(out)}, {DType::Int64, Shape(out)}};
  return {{x.dtype, Shape(out)}};
}

std::vector<TensorType> infer_max_unpool(const InferContext &ctx) {
  const TensorType &x = spatial_input(ctx), &ind = ctx.input(1);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (ind.dtype != DType::Int64) ctx.fail("indices must be int64, got ", dtype_name(ind.dtype));
  if (ind.shape.rank() != x.shape.rank())
    ctx.fail("indices ", ind.shape.to_string(), " must have the input's shape ",
             x.shape.to_string());
  const size_t k = x.shape.rank() - 2;
  if (!ctx.attrs.has("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  const Spatial s = spatial_attrs(ctx, k, ctx.attrs.get_ints("kernel_shape", {}));
  if (ctx.has_input(2)) {
    const auto shape = ctx.int_values(2);
    if (!shape) ctx.defer({x.dtype});
    if (shape->size() != x.shape.rank())
      ctx.fail("output_shape needs ", x.shape.rank(), " values, got ", shape->size());
    for (size_t i = 0; i < shape->size(); ++i) {
      if ((*shape)[i] < 0) ctx.fail("output_shape must be >= 0");
      if (i < 2 && known(x.shape[i]) && (*shape)[i] != x.shape[i])
        ctx.fail("output_shape ", Shape(*shape).to_string(), " must keep N and C of ",
                 x.shape.to_string());
    }
    return {{x.dtype, Shape(*shape)}};
  }
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = x.shape[i + 2];
    out.push_back(known(in)
                      ? checked_mul(in - 1, s.strides[i]) + s.kernel[i] - s.pads[i] - s.pads[i + k]
                      : kUnknownDim);
  }
  return {{x.dtype, Shape(out)}};
}

LUMEN_REGISTER_OP({.name = "conv_nd", .min_inputs = 2, .max_inputs = 3, .infer = infer_conv_nd});
LUMEN_REGISTER_OP(
    {.name = "conv_transpose", .min_inputs = 2, .max_inputs = 3, .infer = infer_conv_transpose});
LUMEN_REGISTER_OP({.name = "max_pool_nd", .num_outputs = 2, .infer = infer_pool_nd<0>});
LUMEN_REGISTER_OP({.name = "avg_pool_nd", .infer = infer_pool_nd<1>});
LUMEN_REGISTER_OP({.name = "lp_pool", .infer = infer_pool_nd<2>});
LUMEN_REGISTER_OP(
    {.name = "max_unpool", .min_inputs = 2, .max_inputs = 3, .infer = infer_max_unpool});

}  // namespace
}  // namespace lumen
