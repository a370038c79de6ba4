// Quantization ops (ONNX semantics):
//   quantize_linear(x, scale, zero_point?)   y = saturate(round_half_even(x / scale) + zero_point)
//   dequantize_linear(x, scale, zero_point?) y = (x - zero_point) * scale
//     scale/zero_point are per tensor (one element), per axis (1-D of x.shape[axis]) or blocked
//     (x's rank, dim `axis` = ceil(x.shape[axis] / block_size)). Attributes: axis (default 1),
//     block_size (default 0), dtype (the output dtype name; quantize defaults to uint8 or the
//     zero point's dtype, dequantize to the scale's dtype).
//   dynamic_quantize_linear(x: float32) -> (y: uint8, scale: float32 [], zero_point: uint8 [])
//   matmul_integer(A, B, a_zero_point?, b_zero_point?) -> int32, NumPy matmul shapes.
//   conv_integer(x, w, x_zero_point?, w_zero_point?) -> int32, 2-D NCHW; attrs strides,
//     dilations, pads [top, left, bottom, right], group.
//   qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y_zp's dtype.
//   qlinear_conv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?) -> y_zp's dtype.
#include <algorithm>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool is_quant_int(DType d) {
  return d == DType::UInt8 || d == DType::Int8 || d == DType::UInt16 || d == DType::Int16;
}
// Quantized element types: the integer ones above plus float8, float4e2m1, int4 and int2.
bool is_quant_type(DType d) {
  return is_quant_int(d) || (is_narrow(d) && d != DType::Float8E8M0);
}
// A per-tensor parameter: a scalar or a one-element 1-D tensor (ONNX allows either).
bool scalar_like(const Shape &s) {
  return s.rank() == 0 || (s.rank() == 1 && s[0] == 1);
}
bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}
bool is_8bit(DType d) {
  return d == DType::UInt8 || d == DType::Int8;
}

// Checks that a scale or zero point of shape `p` fits x of shape `x` (per tensor, per axis or
// blocked). Unknown dims are accepted.
void check_quant_param(const InferContext &ctx, const Shape &x, const Shape &p, const char *what) {
  if (p.numel() == 1 && p.rank() <= 1) return;  // per tensor
  const int64_t block = ctx.attrs.get_int("block_size", 0);
  if (block < 0) ctx.fail("block_size must be >= 0, got ", block);
  if (x.rank() == 0) ctx.fail(what, " of shape ", p.to_string(), " must have one element");
  const size_t axis = x.normalize_axis(ctx.attrs.get_int("axis", 1));
  auto same = [](int64_t a, int64_t b) { return a == b || a == kUnknownDim || b == kUnknownDim; };
  if (block == 0) {
    if (p.rank() != 1 || !same(p[0], x[axis]))
      ctx.fail(what, " of shape ", p.to_string(), " must have one element or be 1-D of size ",
               x[axis], " (input ", x.to_string(), ", axis ", axis, ")");
    return;
  }
  bool ok = p.rank() == x.rank();
  for (size_t d = 0; ok && d < x.rank(); ++d) {
    if (d != axis)
      ok = same(p[d], x[d]);
    else if (x[d] != kUnknownDim && p[d] != kUnknownDim)
      ok = p[d] == (x[d] + block - 1) / block;
  }
  if (!ok)
    ctx.fail(what, " of shape ", p.to_string(), " does not fit blocked quantization of input ",
             x.to_string(), " (axis ", axis, ", block_size ", block, ")");
}

std::vector<TensorType> infer_quantize(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &s = ctx.input(1);
  if (!is_float(x.dtype)) ctx.fail("x must be floating point, got ", dtype_name(x.dtype));
  if (!is_float(s.dtype)) ctx.fail("scale must be floating point, got ", dtype_name(s.dtype));
  check_quant_param(ctx, x.shape, s.shape, "scale");
  DType out = dtype_from_name(ctx.attrs.get_string("dtype", "uint8"));
  if (ctx.has_input(2)) {
    const TensorType &z = ctx.input(2);
    if (ctx.attrs.has("dtype") && z.dtype != out)
      ctx.fail("zero point dtype ", dtype_name(z.dtype), " differs from dtype ", dtype_name(out));
    out = z.dtype;
    if (z.shape != s.shape && !(scalar_like(z.shape) && scalar_like(s.shape)))
      ctx.fail("zero point shape ", z.shape.to_string(), " differs from scale shape ",
               s.shape.to_string());
  }
  if (!is_quant_type(out)) ctx.fail("output dtype ", dtype_name(out), " is not supported");
  return {{out, x.shape}};
}

std::vector<TensorType> infer_dequantize(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &s = ctx.input(1);
  if (!is_quant_type(x.dtype) && x.dtype != DType::Int32)
    ctx.fail("x dtype ", dtype_name(x.dtype), " is not supported");
  if (!is_float(s.dtype)) ctx.fail("scale must be floating point, got ", dtype_name(s.dtype));
  check_quant_param(ctx, x.shape, s.shape, "scale");
  if (ctx.has_input(2)) {
    const TensorType &z = ctx.input(2);
    if (z.dtype != x.dtype)
      ctx.fail("zero point dtype ", dtype_name(z.dtype), " differs from x dtype ",
               dtype_name(x.dtype));
    if (z.shape != s.shape && !(scalar_like(z.shape) && scalar_like(s.shape)))
      ctx.fail("zero point shape ", z.shape.to_string(), " differs from scale shape ",
               s.shape.to_string());
  }
  const DType out =
      ctx.attrs.has("dtype") ? dtype_from_name(ctx.attrs.get_string("dtype", "")) : s.dtype;
  if (!is_float(out)) ctx.fail("output dtype ", dtype_name(out), " is not supported");
  return {{out, x.shape}};
}

std::vector<TensorType> infer_dynamic_quantize(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.dtype != DType::Float32) ctx.fail("x must be float32, got ", dtype_name(x.dtype));
  return {{DType::UInt8, x.shape}, {DType::Float32, Shape{}}, {DType::UInt8, Shape{}}};
}

bool broadcast_dim(int64_t a, int64_t b, int64_t &out) {
  if (a == b || b == 1)
    out = a;
  else if (a == 1)
    out = b;
  else if (a == kUnknownDim)
    out = b;
  else if (b == kUnknownDim)
    out = a;
  else
    return false;
  return true;
}

// NumPy matmul output shape for rank >= 2 operands (rank 1 is promoted as NumPy does).
Shape matmul_shape(const InferContext &ctx, const Shape &a, const Shape &b) {
  if (a.rank() == 0 || b.rank() == 0)
    ctx.fail("operands must have rank >= 1, got ", a.to_string(), " and ", b.to_string());
  const size_t ra = a.rank(), rb = b.rank();
  const int64_t ka = a[ra - 1], kb = rb == 1 ? b[0] : b[rb - 2];
  if (ka != kb && ka != kUnknownDim && kb != kUnknownDim)
    ctx.fail("inner dimensions do not match: ", a.to_string(), " @ ", b.to_string());
  const size_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, n = std::max(ba, bb);
  std::vector<int64_t> dims(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - ba ? 1 : a[i - (n - ba)];
    const int64_t db = i < n - bb ? 1 : b[i - (n - bb)];
    if (!broadcast_dim(da, db, dims[i]))
      ctx.fail("batch dimensions do not broadcast: ", a.to_string(), " @ ", b.to_string());
  }
  if (ra >= 2) dims.push_back(a[ra - 2]);
  if (rb >= 2) dims.push_back(b[rb - 1]);
  return Shape(std::move(dims));
}

// A zero point (or scale) that is one element, or 1-D of `n` elements (per row / column).
void check_vector_param(const InferContext &ctx, const TensorType *p, int64_t n, const char *what) {
  if (!p) return;
  if (p->shape.numel() == 1 && p->shape.rank() <= 1) return;
  if (p->shape.rank() == 1 && (p->shape[0] == n || n == kUnknownDim)) return;
  ctx.fail(what, " of shape ", p->shape.to_string(), " must have one element or ", n, " elements");
}

std::vector<TensorType> infer_matmul_integer(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  if (!is_8bit(a.dtype) || !is_8bit(b.dtype))
    ctx.fail("A and B must be int8 or uint8, got ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
  const Shape out = matmul_shape(ctx, a.shape, b.shape);
  for (size_t i : {size_t{2}, size_t{3}})
    if (ctx.has_input(i) && ctx.input(i).dtype != ctx.input(i - 2).dtype)
      ctx.fail("zero point ", i, " must have its operand's dtype");
  const int64_t m = a.shape.rank() >= 2 ? a.shape[a.shape.rank() - 2] : 1;
  const int64_t n = b.shape.rank() >= 2 ? b.shape[b.shape.rank() - 1] : 1;
  check_vector_param(ctx, ctx.has_input(2) ? &ctx.input(2) : nullptr, m, "a_zero_point");
  check_vector_param(ctx, ctx.has_input(3) ? &ctx.input(3) : nullptr, n, "b_zero_point");
  return {{DType::Int32, out}};
}

// 2-D NCHW convolution output shape from x, w and the explicit attributes.
Shape conv2d_shape(const InferContext &ctx, const Shape &x, const Shape &w) {
  if (x.rank() != 4 || w.rank() != 4)
    ctx.fail("only 2-D convolution is supported: x ", x.to_string(), ", w ", w.to_string());
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const int64_t group = ctx.attrs.get_int("group", 1);
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    ctx.fail("strides/dilations need 2 values and pads 4");
  for (int i = 0; i < 2; ++i)
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[i + 2] < 0)
      ctx.fail("strides and dilations must be >= 1 and pads >= 0");
  if (group < 1) ctx.fail("group must be >= 1, got ", group);
  if (x[1] != kUnknownDim && w[1] != kUnknownDim && x[1] != checked_mul(w[1], group))
    ctx.fail("input channels ", x[1], " != weight channels ", w[1], " * group ", group);
  if (w[0] != kUnknownDim && w[0] % group != 0)
    ctx.fail("output channels ", w[0], " are not divisible by group ", group);
  std::vector<int64_t> dims{x[0], w[0], kUnknownDim, kUnknownDim};
  for (int i = 0; i < 2; ++i) {
    if (x[2 + i] == kUnknownDim || w[2 + i] == kUnknownDim) continue;
    const int64_t span = checked_add(checked_mul(dilations[i], w[2 + i] - 1), int64_t{1});
    const int64_t padded = checked_add(x[2 + i], checked_add(pads[i], pads[i + 2]));
    if (padded < span)
      ctx.fail("kernel ", w.to_string(), " is larger than the padded input ", x.to_string());
    dims[2 + i] = (padded - span) / strides[i] + 1;
  }
  return Shape(std::move(dims));
}

std::vector<TensorType> infer_conv_integer(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &w = ctx.input(1);
  if (!is_8bit(x.dtype) || !is_8bit(w.dtype))
    ctx.fail("x and w must be int8 or uint8, got ", dtype_name(x.dtype), " and ",
             dtype_name(w.dtype));
  const Shape out = conv2d_shape(ctx, x.shape, w.shape);
  if (ctx.has_input(2)) check_vector_param(ctx, &ctx.input(2), 1, "x_zero_point");
  if (ctx.has_input(3)) check_vector_param(ctx, &ctx.input(3), w.shape[0], "w_zero_point");
  return {{DType::Int32, out}};
}

// Shared checks of the (scale, zero point) pairs of qlinear_matmul / qlinear_conv.
void check_qlinear_params(const InferContext &ctx, size_t x, size_t w, int64_t w_len) {
  for (size_t i : {size_t{1}, x + 4, size_t{6}})
    if (!is_float(ctx.input(i).dtype))
      ctx.fail("scale input ", i, " must be floating point, got ", dtype_name(ctx.input(i).dtype));
  if (!is_8bit(ctx.input(0).dtype) || !is_8bit(ctx.input(w).dtype) || !is_8bit(ctx.input(7).dtype))
    ctx.fail("quantized inputs must be int8 or uint8");
  if (ctx.input(2).dtype != ctx.input(0).dtype || ctx.input(5).dtype != ctx.input(w).dtype)
    ctx.fail("zero points must have their operand's dtype");
  check_vector_param(ctx, &ctx.input(1), 1, "x_scale");
  check_vector_param(ctx, &ctx.input(2), 1, "x_zero_point");
  check_vector_param(ctx, &ctx.input(6), 1, "y_scale");
  check_vector_param(ctx, &ctx.input(7), 1, "y_zero_point");
  check_vector_param(ctx, &ctx.input(4), w_len, "w_scale");
  check_vector_param(ctx, &ctx.input(5), w_len, "w_zero_point");
}

std::vector<TensorType> infer_qlinear_matmul(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(3);
  const Shape out = matmul_shape(ctx, a.shape, b.shape);
  const int64_t n = b.shape.rank() >= 2 ? b.shape[b.shape.rank() - 1] : 1;
  check_qlinear_params(ctx, 0, 3, n);
  return {{ctx.input(7).dtype, out}};
}

std::vector<TensorType> infer_qlinear_conv(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &w = ctx.input(3);
  const Shape out = conv2d_shape(ctx, x.shape, w.shape);
  check_qlinear_params(ctx, 0, 3, w.shape[0]);
  if (ctx.has_input(8)) {
    const TensorType &bias = ctx.input(8);
    if (bias.dtype != DType::Int32) ctx.fail("B must be int32, got ", dtype_name(bias.dtype));
    if (bias.shape.rank() != 1 ||
        (bias.shape[0] != w.shape[0] && bias.shape[0] != kUnknownDim && w.shape[0] != kUnknownDim))
      ctx.fail("B must be 1-D of ", w.shape[0], " elements, got ", bias.shape.to_string());
  }
  return {{ctx.input(7).dtype, out}};
}

LUMEN_REGISTER_OP(
    {.name = "quantize_linear", .min_inputs = 2, .max_inputs = 3, .infer = infer_quantize});
LUMEN_REGISTER_OP(
    {.name = "dequantize_linear", .min_inputs = 2, .max_inputs = 3, .infer = infer_dequantize});
LUMEN_REGISTER_OP({.name = "dynamic_quantize_linear",
                   .min_inputs = 1,
                   .max_inputs = 1,
                   .num_outputs = 3,
                   .infer = infer_dynamic_quantize});
LUMEN_REGISTER_OP(
    {.name = "matmul_integer", .min_inputs = 2, .max_inputs = 4, .infer = infer_matmul_integer});
LUMEN_REGISTER_OP(
    {.name = "conv_integer", .min_inputs = 2, .max_inputs = 4, .infer = infer_conv_integer});
LUMEN_REGISTER_OP(
    {.name = "qlinear_matmul", .min_inputs = 8, .max_inputs = 8, .infer = infer_qlinear_matmul});
LUMEN_REGISTER_OP(
    {.name = "qlinear_conv", .min_inputs = 8, .max_inputs = 9, .infer = infer_qlinear_conv});

}  // namespace
}  // namespace lumen
