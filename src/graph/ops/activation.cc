// Element-wise activations and unary math: one floating-point input, one output of the same type
// and shape. All are element-wise, so the planner may run them in place.
#include <cmath>

#include "graph/op_schema.h"

namespace lumen {
namespace {

std::vector<TensorType> same_as_input(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    ctx.fail("expected a float32 or float64 input, got ", dtype_name(x.dtype));
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
  return same_as_input(ctx);
}

LUMEN_REGISTER_OP({.name = "relu", .infer = same_as_input, .elementwise = true});
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
LUMEN_REGISTER_OP({.name = "neg", .infer = same_as_input, .elementwise = true});
LUMEN_REGISTER_OP({.name = "abs", .infer = same_as_input, .elementwise = true});

}  // namespace
}  // namespace lumen
