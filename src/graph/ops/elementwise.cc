// Binary element-wise ops with NumPy broadcasting: add, sub, mul, div, pow, maximum, minimum.
// Both inputs have the same numeric dtype (pow: the exponent may differ); the output has input 0's
// dtype and the broadcast shape.

#include "graph/op_schema.h"

namespace lumen {
namespace {

// Same dtype for both inputs, any numeric dtype. Pow (mixed = true) lets the exponent have another
// numeric dtype: the output has the base's dtype, as in ONNX.
std::vector<TensorType> infer_binary_impl(const InferContext &ctx, bool mixed) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  if (a.dtype == DType::Bool || b.dtype == DType::Bool)
    ctx.fail("expected numeric inputs, got ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  if (!mixed && a.dtype != b.dtype)
    ctx.fail("both inputs must have the same dtype, got ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
  std::optional<Shape> shape = broadcast_shapes(a.shape, b.shape);
  if (!shape)
    ctx.fail("shapes ", a.shape.to_string(), " and ", b.shape.to_string(),
             " cannot be broadcast together");
  return {TensorType{a.dtype, std::move(*shape)}};
}

std::vector<TensorType> infer_binary(const InferContext &ctx) {
  return infer_binary_impl(ctx, false);
}
std::vector<TensorType> infer_pow(const InferContext &ctx) {
  return infer_binary_impl(ctx, true);
}

LUMEN_REGISTER_OP({.name = "add", .min_inputs = 2, .max_inputs = 2, .infer = infer_binary});
LUMEN_REGISTER_OP({.name = "sub", .min_inputs = 2, .max_inputs = 2, .infer = infer_binary});
LUMEN_REGISTER_OP({.name = "mul", .min_inputs = 2, .max_inputs = 2, .infer = infer_binary});
LUMEN_REGISTER_OP({.name = "div", .min_inputs = 2, .max_inputs = 2, .infer = infer_binary});
LUMEN_REGISTER_OP({.name = "pow", .min_inputs = 2, .max_inputs = 2, .infer = infer_pow});
LUMEN_REGISTER_OP({.name = "maximum", .min_inputs = 2, .max_inputs = 2, .infer = infer_binary});
LUMEN_REGISTER_OP({.name = "minimum", .min_inputs = 2, .max_inputs = 2, .infer = infer_binary});

}  // namespace
}  // namespace lumen
