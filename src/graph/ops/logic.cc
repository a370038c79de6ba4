// Comparison, logical, bitwise and selection ops, all with NumPy broadcasting.
//   equal, less, greater, less_equal, greater_equal: two inputs of one dtype -> bool
//   logical_and, logical_or, logical_xor: bool x bool -> bool; logical_not: bool -> bool
//   bitwise_and, bitwise_or, bitwise_xor, bit_shift (attr direction LEFT/RIGHT): integers
//   bitwise_not: integers; is_nan, is_inf (detect_positive/detect_negative): float -> bool
//   where(condition: bool, x, y): x and y of one dtype, three-way broadcast

#include "graph/op_schema.h"

namespace lumen {
namespace {

Shape broadcast_or_fail(const InferContext &ctx, const Shape &a, const Shape &b) {
  std::optional<Shape> shape = broadcast_shapes(a, b);
  if (!shape)
    ctx.fail("shapes ", a.to_string(), " and ", b.to_string(), " cannot be broadcast together");
  return std::move(*shape);
}

enum class Kinds { Any, Bool, Integer, Float };

void check_kind(const InferContext &ctx, DType dtype, Kinds kinds) {
  switch (kinds) {
    case Kinds::Any:
      return;
    case Kinds::Bool:
      if (dtype != DType::Bool) ctx.fail("expected bool inputs, got ", dtype_name(dtype));
      return;
    case Kinds::Integer:
      if (!is_integral(dtype)) ctx.fail("expected integer inputs, got ", dtype_name(dtype));
      return;
    case Kinds::Float:
      if (!is_floating(dtype)) ctx.fail("expected a floating-point input, got ", dtype_name(dtype));
      return;
  }
}

template <Kinds kinds, bool to_bool>
std::vector<TensorType> infer_binary(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  if (a.dtype != b.dtype)
    ctx.fail("both inputs must have the same dtype, got ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
  check_kind(ctx, a.dtype, kinds);
  return {TensorType{to_bool ? DType::Bool : a.dtype, broadcast_or_fail(ctx, a.shape, b.shape)}};
}

template <Kinds kinds, bool to_bool>
std::vector<TensorType> infer_unary(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_kind(ctx, x.dtype, kinds);
  return {TensorType{to_bool ? DType::Bool : x.dtype, x.shape}};
}

std::vector<TensorType> infer_bit_shift(const InferContext &ctx) {
  const std::string direction = ctx.attrs.get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.fail("attribute 'direction' must be LEFT or RIGHT, got '", direction, "'");
  return infer_binary<Kinds::Integer, false>(ctx);
}

std::vector<TensorType> infer_where(const InferContext &ctx) {
  const TensorType &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  if (c.dtype != DType::Bool) ctx.fail("condition must be bool, got ", dtype_name(c.dtype));
  if (x.dtype != y.dtype)
    ctx.fail("x and y must have the same dtype, got ", dtype_name(x.dtype), " and ",
             dtype_name(y.dtype));
  const Shape xy = broadcast_or_fail(ctx, x.shape, y.shape);
  return {TensorType{x.dtype, broadcast_or_fail(ctx, c.shape, xy)}};
}

#define LUMEN_LOGIC_BINARY(op, kinds, to_bool) \
  LUMEN_REGISTER_OP(                           \
      {.name = op, .min_inputs = 2, .max_inputs = 2, .infer = infer_binary<kinds, to_bool>})

LUMEN_LOGIC_BINARY("equal", Kinds::Any, true);
LUMEN_LOGIC_BINARY("less", Kinds::Any, true);
LUMEN_LOGIC_BINARY("greater", Kinds::Any, true);
LUMEN_LOGIC_BINARY("less_equal", Kinds::Any, true);
LUMEN_LOGIC_BINARY("greater_equal", Kinds::Any, true);
LUMEN_LOGIC_BINARY("logical_and", Kinds::Bool, true);
LUMEN_LOGIC_BINARY("logical_or", Kinds::Bool, true);
LUMEN_LOGIC_BINARY("logical_xor", Kinds::Bool, true);
LUMEN_LOGIC_BINARY("bitwise_and", Kinds::Integer, false);
LUMEN_LOGIC_BINARY("bitwise_or", Kinds::Integer, false);
LUMEN_LOGIC_BINARY("bitwise_xor", Kinds::Integer, false);
LUMEN_REGISTER_OP(
    {.name = "bit_shift", .min_inputs = 2, .max_inputs = 2, .infer = infer_bit_shift});
LUMEN_REGISTER_OP({.name = "logical_not",
                   .infer = infer_unary<Kinds::Bool, true>,
                   .elementwise = true});
LUMEN_REGISTER_OP({.name = "bitwise_not",
                   .infer = infer_unary<Kinds::Integer, false>,
                   .elementwise = true});
LUMEN_REGISTER_OP({.name = "is_nan", .infer = infer_unary<Kinds::Float, true>});
LUMEN_REGISTER_OP({.name = "is_inf", .infer = infer_unary<Kinds::Float, true>});
LUMEN_REGISTER_OP({.name = "where", .min_inputs = 3, .max_inputs = 3, .infer = infer_where});

}  // namespace
}  // namespace lumen
