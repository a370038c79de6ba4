// Element-wise ONNX ops: arithmetic, math and activations.
#include <limits>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

LUMEN_REGISTER_ONNX_CONVERTER("Add", 7, same_op("add"));
LUMEN_REGISTER_ONNX_CONVERTER("Sub", 7, same_op("sub"));
LUMEN_REGISTER_ONNX_CONVERTER("Mul", 7, same_op("mul"));
LUMEN_REGISTER_ONNX_CONVERTER("Div", 7, same_op("div"));
LUMEN_REGISTER_ONNX_CONVERTER("Pow", 7, same_op("pow"));
LUMEN_REGISTER_ONNX_CONVERTER("Relu", 6, same_op("relu"));
LUMEN_REGISTER_ONNX_CONVERTER("Sigmoid", 6, same_op("sigmoid"));
LUMEN_REGISTER_ONNX_CONVERTER("Tanh", 6, same_op("tanh"));
LUMEN_REGISTER_ONNX_CONVERTER("LeakyRelu", 6, same_op("leaky_relu"));
LUMEN_REGISTER_ONNX_CONVERTER("Elu", 6, same_op("elu"));
LUMEN_REGISTER_ONNX_CONVERTER("Softplus", 1, same_op("softplus"));
LUMEN_REGISTER_ONNX_CONVERTER("HardSigmoid", 6, same_op("hard_sigmoid"));
LUMEN_REGISTER_ONNX_CONVERTER("HardSwish", 14, same_op("hard_swish"));
LUMEN_REGISTER_ONNX_CONVERTER("Gelu", 20, same_op("gelu"));
LUMEN_REGISTER_ONNX_CONVERTER("Exp", 6, same_op("exp"));
LUMEN_REGISTER_ONNX_CONVERTER("Log", 6, same_op("log"));
LUMEN_REGISTER_ONNX_CONVERTER("Sqrt", 6, same_op("sqrt"));
LUMEN_REGISTER_ONNX_CONVERTER("Neg", 6, same_op("neg"));
LUMEN_REGISTER_ONNX_CONVERTER("Abs", 6, same_op("abs"));

// Sum/Max/Min are variadic: a chain of the binary op (each step broadcasts like NumPy).
Converter variadic(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
    if (ctx.num_inputs() == 1) return {ctx.input(0)};
    Value *acc = ctx.input(0);
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      acc = i + 1 == ctx.num_inputs() ? ctx.emit(op, {acc, ctx.input(i)})
                                      : ctx.add(op, {acc, ctx.input(i)});
    return {acc};
  };
}
LUMEN_REGISTER_ONNX_CONVERTER("Sum", 8, variadic("add"));
LUMEN_REGISTER_ONNX_CONVERTER("Max", 8, variadic("maximum"));
LUMEN_REGISTER_ONNX_CONVERTER("Min", 8, variadic("minimum"));

// Clip: bounds are attributes before opset 11, optional inputs from 11 on. Constant bounds become
// the clip op's attributes; bounds known only at run time become maximum/minimum.
std::vector<Value *> convert_clip(NodeContext &ctx) {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (ctx.opset() < 11) {
    lo = ctx.attrs().get_float("min", lo);
    hi = ctx.attrs().get_float("max", hi);
    return {ctx.emit("clip", {ctx.input(0)}, {{"min", lo}, {"max", hi}})};
  }
  auto constant_bound = [&](size_t i, double *out) {
    if (!ctx.has_input(i)) return true;
    const Tensor *t = ctx.constant_input(i);
    if (!t || t->numel() != 1) return false;
    if (t->dtype() == DType::Float32) *out = t->data<float>()[0];
    else if (t->dtype() == DType::Float64) *out = t->data<double>()[0];
    else return false;
    return true;
  };
  if (constant_bound(1, &lo) && constant_bound(2, &hi))
    return {ctx.emit("clip", {ctx.input(0)}, {{"min", lo}, {"max", hi}})};
  Value *y = ctx.input(0);
  if (ctx.has_input(1))
    y = ctx.has_input(2) ? ctx.add("maximum", {y, ctx.input(1)}) : ctx.emit("maximum", {y, ctx.input(1)});
  if (ctx.has_input(2)) y = ctx.emit("minimum", {y, ctx.input(2)});
  return {y};
}
LUMEN_REGISTER_ONNX_CONVERTER("Clip", 6, convert_clip);

}  // namespace
}  // namespace lumen::onnx_import
