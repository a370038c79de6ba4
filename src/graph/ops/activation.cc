// Element-wise activations and unary math: one floating-point input, one output of the same type
// and shape. All are element-wise, so the planner may run them in place.
#include <cmath>

#include "graph/op_schema.h"

namespace lumen {
namespace {

std::vector<TensorType> same_as_input(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_floating(x.dtype)) ctx.fail("expected a floating-point input, got ", dtype_name(x.dtype));
  return {x};
}

// relu, clip, neg, abs also take signed integers.
std::vector<TensorType> signed_numeric(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const DType d = x.dtype;
  if (!is_floating(d) && d != DType::Int8 && d != DType::Int16 && d != DType::Int32 &&
      d != DType::Int64)
    ctx.fail("expected a floating-point or signed integer input, got ", dtype_name(d));
  return {x};
}

std::vector<TensorType> infer_gelu(const InferContext &ctx) {
  const std::string approximate = ctx.attrs.get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    ctx.fail("attribute approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  return same_as_input(ctx);
}

std::vector<TensorType> infer_clip(const InferContext &ctx) {
  const double lo = ctx.attrs.get_float("min", -INFINITY);
  const double hi = ctx.attrs.get_float("max", INFINITY);
  if (std::isnan(lo) || std::isnan(hi)) ctx.fail("attributes min and max must not be NaN");
  return signed_numeric(ctx);
}

LUMEN_REGISTER_OP({.name = "relu", .infer = signed_numeric, .elementwise = true});
LUMEN_REGISTER_OP({.name = "leaky_relu", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "sigmoid", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "tanh", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "gelu", .infer = infer_gelu, .elementwise = true});
LUMEN_REGISTER_OP({.name = "silu", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "elu", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "softplus", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "hard_sigmoid", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "hard_swish", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "clip", .infer = infer_clip, .elementwise = true});
LUMEN_REGISTER_OP({.name = "exp", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "log", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "sqrt", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "neg", .infer = signed_numeric, .elementwise = true});
LUMEN_REGISTER_OP({.name = "abs", .infer = signed_numeric, .elementwise = true});

}  // namespace
}  // namespace lumen
