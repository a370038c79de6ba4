// Element-wise math ops.
//   Float unary (float16/bfloat16/float32/float64): sin cos tan asin acos atan sinh cosh asinh
//     acosh atanh erf reciprocal floor ceil round (half to even) softsign mish
//     selu (alpha, gamma) celu (alpha) thresholded_relu (alpha)
//   Numeric unary (any non-bool dtype): sign, shrink (bias, lambd)
//   mod(a, b) (attr fmod): same dtype, broadcast; integer mod follows the divisor's sign unless
//     fmod=1 (then the dividend's, like C).
//   prelu(x, slope): slope broadcasts to x; output x's dtype and shape.
//   mean(x...): one or more inputs of one floating dtype, broadcast together.

#include "graph/op_schema.h"

namespace lumen {
namespace {

std::vector<TensorType> infer_float_unary(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_floating(x.dtype)) ctx.fail("expected a floating-point input, got ", dtype_name(x.dtype));
  return {x};
}

std::vector<TensorType> infer_numeric_unary(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.dtype == DType::Bool) ctx.fail("expected a numeric input, got bool");
  return {x};
}

std::vector<TensorType> infer_mod(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  if (a.dtype != b.dtype)
    ctx.fail("both inputs must have the same dtype, got ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
  if (a.dtype == DType::Bool) ctx.fail("expected numeric inputs, got bool");
  std::optional<Shape> shape = broadcast_shapes(a.shape, b.shape);
  if (!shape)
    ctx.fail("shapes ", a.shape.to_string(), " and ", b.shape.to_string(),
             " cannot be broadcast together");
  return {TensorType{a.dtype, std::move(*shape)}};
}

std::vector<TensorType> infer_prelu(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &slope = ctx.input(1);
  if (x.dtype != slope.dtype)
    ctx.fail("x and slope must have the same dtype, got ", dtype_name(x.dtype), " and ",
             dtype_name(slope.dtype));
  if (x.dtype == DType::Bool) ctx.fail("expected numeric inputs, got bool");
  std::optional<Shape> shape = broadcast_shapes(x.shape, slope.shape);
  if (!shape || shape->rank() != x.shape.rank() || (x.shape.is_static() && *shape != x.shape))
    ctx.fail("slope of shape ", slope.shape.to_string(), " does not broadcast to x of shape ",
             x.shape.to_string());
  return {x};
}

std::vector<TensorType> infer_mean(const InferContext &ctx) {
  const TensorType &first = ctx.input(0);
  if (!is_floating(first.dtype))
    ctx.fail("expected floating-point inputs, got ", dtype_name(first.dtype));
  Shape shape = first.shape;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const TensorType &in = ctx.input(i);
    if (in.dtype != first.dtype)
      ctx.fail("all inputs must have the same dtype, got ", dtype_name(first.dtype), " and ",
               dtype_name(in.dtype), " (input ", i, ")");
    std::optional<Shape> next = broadcast_shapes(shape, in.shape);
    if (!next)
      ctx.fail("shapes ", shape.to_string(), " and ", in.shape.to_string(), " (input ", i,
               ") cannot be broadcast together");
    shape = std::move(*next);
  }
  return {TensorType{first.dtype, std::move(shape)}};
}

#define LUMEN_FLOAT_UNARY_OP(op) \
  LUMEN_REGISTER_OP({.name = op, .infer = infer_float_unary, .elementwise = true})

LUMEN_FLOAT_UNARY_OP("sin");
LUMEN_FLOAT_UNARY_OP("cos");
LUMEN_FLOAT_UNARY_OP("tan");
LUMEN_FLOAT_UNARY_OP("asin");
LUMEN_FLOAT_UNARY_OP("acos");
LUMEN_FLOAT_UNARY_OP("atan");
LUMEN_FLOAT_UNARY_OP("sinh");
LUMEN_FLOAT_UNARY_OP("cosh");
LUMEN_FLOAT_UNARY_OP("asinh");
LUMEN_FLOAT_UNARY_OP("acosh");
LUMEN_FLOAT_UNARY_OP("atanh");
LUMEN_FLOAT_UNARY_OP("erf");
LUMEN_FLOAT_UNARY_OP("reciprocal");
LUMEN_FLOAT_UNARY_OP("floor");
LUMEN_FLOAT_UNARY_OP("ceil");
LUMEN_FLOAT_UNARY_OP("round");
LUMEN_FLOAT_UNARY_OP("softsign");
LUMEN_FLOAT_UNARY_OP("mish");
LUMEN_FLOAT_UNARY_OP("selu");
LUMEN_FLOAT_UNARY_OP("celu");
LUMEN_FLOAT_UNARY_OP("thresholded_relu");
LUMEN_REGISTER_OP({.name = "sign", .infer = infer_numeric_unary, .elementwise = true});
LUMEN_REGISTER_OP({.name = "shrink", .infer = infer_numeric_unary, .elementwise = true});
LUMEN_REGISTER_OP({.name = "mod", .min_inputs = 2, .max_inputs = 2, .infer = infer_mod});
LUMEN_REGISTER_OP({.name = "prelu", .min_inputs = 2, .max_inputs = 2, .infer = infer_prelu});
LUMEN_REGISTER_OP({.name = "mean", .min_inputs = 1, .max_inputs = 1 << 20, .infer = infer_mean});

}  // namespace
}  // namespace lumen
