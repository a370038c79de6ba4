// Fused ops, created by the fusion passes: a conv/gemm/matmul whose kernel finishes each output
// block with an epilogue y = act(y + bias + residual) instead of running separate element-wise ops.
//   fused_conv(x, w, b?, z?): act(conv2d(x, w) + b + z); conv2d's attributes; z (residual) has the
//     output's shape and dtype exactly (no broadcasting).
//   fused_gemm(a, b, c?): act(alpha * op(A) op(B) + beta * C); gemm's attributes.
//   fused_matmul(a, b, bias?): act(matmul(a, b) + bias); bias is 1-D [N], N = last output dim.
//   fused_conv_max_pool(x, w, b?): max_pool2d(fused_conv(x, w, b)); the pool's attributes
//     prefixed "pool_" (graph/ops/conv_max_pool.h).
// The activation: attribute "activation" ("" or absent: none) naming one of the activation ops
// in graph/ops/epilogue_activations.h, and that op's own attributes prefixed "activation_"
// (activation_alpha, activation_min, activation_approximate...). float32 and float64 only.
#include <cmath>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "graph/ops/conv_max_pool.h"
#include "graph/ops/epilogue_activations.h"

namespace lumen {
namespace {

void check_float(const InferContext &ctx) {
  const DType d = ctx.input(0).dtype;
  if (d != DType::Float32 && d != DType::Float64)
    ctx.fail("expected float32 or float64 inputs, got ", dtype_name(d));
}

void check_activation(const InferContext &ctx) {
  const std::string name = ctx.attrs.get_string("activation", "");
  const EpilogueActivation *activation = name.empty() ? nullptr : find_epilogue_activation(name);
  if (!name.empty() && !activation)
    ctx.fail("unknown activation '", name, "'; expected one of ", epilogue_activation_names());
  for (const auto &[key, value] : ctx.attrs.items()) {
    if (!key.starts_with(kActivationPrefix)) continue;
    const std::string param = key.substr(kActivationPrefix.size());
    if (!activation || !takes_param(*activation, param))
      ctx.fail("attribute '", key, "' does not apply to activation '", name, "'");
  }
  if (name == "gelu") {
    const std::string approximate = ctx.attrs.get_string("activation_approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      ctx.fail("attribute activation_approximate must be \"none\" or \"tanh\", got \"", approximate,
               "\"");
  }
  for (const char *key :
       {"activation_alpha", "activation_beta", "activation_min", "activation_max"})
    if (ctx.attrs.has(key) && std::isnan(ctx.attrs.get_float(key, 0.0)))
      ctx.fail("attribute ", key, " must not be NaN");
}

// The same context restricted to inputs [first, first + num_inputs) of the fused op (attributes
// `attrs`, default the fused node's), so errors still name the fused op and node.
InferContext base_context(const InferContext &ctx, size_t num_inputs, size_t first = 0,
                          const Attributes *attrs = nullptr) {
  std::vector<const TensorType *> inputs(num_inputs, nullptr);
  std::vector<const Tensor *> values(num_inputs, nullptr);
  for (size_t i = 0; i < num_inputs; ++i) {
    if (ctx.has_input(first + i)) inputs[i] = ctx.inputs[first + i];
    values[i] = ctx.value(first + i);
  }
  return InferContext{.inputs = std::move(inputs),
                      .attrs = attrs ? *attrs : ctx.attrs,
                      .op = ctx.op,
                      .node = ctx.node,
                      .values = std::move(values)};
}

// Known dims must agree; unknown ones are checked again at run time, when every dim is known.
bool same_shape(const Shape &a, const Shape &b) {
  if (a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (a[i] != b[i] && a[i] != kUnknownDim && b[i] != kUnknownDim) return false;
  return true;
}

std::vector<TensorType> infer_fused_conv(const InferContext &ctx) {
  check_float(ctx);
  check_activation(ctx);
  auto out = get_op("conv2d").infer(base_context(ctx, 3));
  if (ctx.has_input(3)) {
    const TensorType &z = ctx.input(3);
    if (z.dtype != out[0].dtype)
      ctx.fail("residual z must have the output's dtype ", dtype_name(out[0].dtype), ", got ",
               dtype_name(z.dtype));
    if (!same_shape(z.shape, out[0].shape))
      ctx.fail("residual z must have the output's shape ", out[0].shape.to_string(), ", got ",
               z.shape.to_string(), " (no broadcasting)");
  }
  return out;
}

std::vector<TensorType> infer_fused_conv_max_pool(const InferContext &ctx) {
  check_float(ctx);
  if (ctx.attrs.has(std::string(kBandRowsAttr)) &&
      ctx.attrs.get_int(std::string(kBandRowsAttr), 0) < 1)
    ctx.fail("attribute ", kBandRowsAttr, " must be at least 1");
  const Attributes conv_attrs = conv_stage_attributes(ctx.attrs);
  const auto t = infer_fused_conv(base_context(ctx, 3, 0, &conv_attrs));
  const Attributes pool_attrs = pool_stage_attributes(ctx.attrs);
  return get_op("max_pool2d")
      .infer(InferContext{.inputs = {&t[0]}, .attrs = pool_attrs, .op = ctx.op, .node = ctx.node});
}

std::vector<TensorType> infer_fused_gemm(const InferContext &ctx) {
  check_float(ctx);
  check_activation(ctx);
  return get_op("gemm").infer(base_context(ctx, 3));
}

std::vector<TensorType> infer_fused_matmul(const InferContext &ctx) {
  check_float(ctx);
  check_activation(ctx);
  auto out = get_op("matmul").infer(base_context(ctx, 2));
  if (ctx.has_input(2)) {
    const TensorType &bias = ctx.input(2);
    const Shape &y = out[0].shape;
    if (bias.dtype != out[0].dtype)
      ctx.fail("bias must have the output's dtype ", dtype_name(out[0].dtype), ", got ",
               dtype_name(bias.dtype));
    if (y.rank() == 0) ctx.fail("a bias needs an output of rank >= 1, got a scalar output");
    const int64_t n = y[y.rank() - 1];
    if (bias.shape.rank() != 1 || !same_shape(bias.shape, Shape{n}))
      ctx.fail("bias must have shape [", n, "] (the last dim of the output ", y.to_string(),
               "), got ", bias.shape.to_string());
  }
  return out;
}

LUMEN_REGISTER_OP(
    {.name = "fused_conv", .min_inputs = 2, .max_inputs = 4, .infer = infer_fused_conv});
LUMEN_REGISTER_OP({.name = "fused_conv_max_pool",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_fused_conv_max_pool});
LUMEN_REGISTER_OP(
    {.name = "fused_gemm", .min_inputs = 2, .max_inputs = 3, .infer = infer_fused_gemm});
LUMEN_REGISTER_OP(
    {.name = "fused_matmul", .min_inputs = 2, .max_inputs = 3, .infer = infer_fused_matmul});

}  // namespace
}  // namespace lumen
