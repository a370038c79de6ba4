// Shape and constant ONNX ops. Shape arguments given as inputs (Reshape's shape, Unsqueeze's axes
// from opset 13, ...) become Lumen attributes when they are constants, so shapes stay known at
// load time; otherwise they are passed as Lumen op inputs and read at run time.
#include <algorithm>
#include <cstring>
#include <set>

#include "lumen/ops.h"
#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

bool has_static_shape(Value *v) {
  return v->has_shape() && v->shape().is_static();
}

// A constant shape becomes the attribute (so the output shape is known at load time); otherwise
// the shape is passed as an input and read at run time.
std::vector<Value *> convert_reshape(NodeContext &ctx) {
  const int64_t allowzero = ctx.attrs().get_int("allowzero", 0);
  if (ctx.opset() < 5)
    return {emit_folded(ctx, "reshape", {ctx.input(0)},
                        {{"shape", ctx.attrs().get_ints("shape", {})}, {"allowzero", allowzero}})};
  if (ctx.constant_input(1))
    return {emit_folded(ctx, "reshape", {ctx.input(0)},
                        {{"shape", ctx.constant_ints(1, "shape")}, {"allowzero", allowzero}})};
  return {emit_folded(ctx, "reshape", {ctx.input(0), ctx.input(1)}, {{"allowzero", allowzero}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Reshape", 1, convert_reshape);

std::vector<Value *> convert_flatten(NodeContext &ctx) {
  const int64_t axis_attr = ctx.attrs().get_int("axis", 1);
  if (!has_static_shape(ctx.input(0)))
    return {emit_folded(ctx, "flatten", {ctx.input(0)}, {{"axis", axis_attr}})};
  const Shape &shape = ctx.input(0)->shape();
  const auto r = static_cast<int64_t>(shape.rank());
  if (axis_attr < -r || axis_attr > r) ctx.fail("axis ", axis_attr, " out of range for rank ", r);
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + r : axis_attr);
  int64_t rows = 1, cols = 1;
  for (size_t i = 0; i < shape.rank(); ++i)
    (i < axis ? rows : cols) = checked_mul(i < axis ? rows : cols, shape[i]);
  return {
      emit_folded(ctx, "reshape", {ctx.input(0)}, {{"shape", std::vector<int64_t>{rows, cols}}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Flatten", 1, convert_flatten);

Converter pass_inputs(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    std::vector<Value *> inputs;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
    return {emit_folded(ctx, op, inputs, ctx.attrs())};
  };
}
LUMEN_REGISTER_ONNX_CONVERTER("Transpose", 1, pass_inputs("transpose"));
LUMEN_REGISTER_ONNX_CONVERTER("Concat", 4, pass_inputs("concat"));

// Unsqueeze/Squeeze: the axes come from the attribute (before opset 13) or input 1. With a static
// input shape and known axes they become a reshape; otherwise the squeeze/unsqueeze op infers
// the shape (at run time when needed).
std::vector<Value *> convert_squeeze_like(NodeContext &ctx, const std::string &op) {
  Value *x = ctx.input(0);
  std::vector<Value *> inputs{x};
  Attributes attrs;
  if (ctx.opset() < 13) {
    if (ctx.attrs().has("axes")) attrs.set("axes", ctx.attrs().get_ints("axes", {}));
  } else if (ctx.constant_input(1)) {
    attrs.set("axes", ctx.constant_ints(1, "axes"));
  } else if (ctx.has_input(1)) {
    inputs.push_back(ctx.input(1));
  }
  if (inputs.size() == 1 && has_static_shape(x)) {
    // The op's inference checks the axes and gives the shape; the probe node is then dropped.
    Value *probe = ctx.add(op, {x}, attrs);
    const std::vector<int64_t> dims = probe->shape().dims();
    ctx.graph().remove_node(probe->producer());
    return {emit_folded(ctx, "reshape", {x}, {{"shape", dims}, {"allowzero", int64_t{1}}})};
  }
  return {emit_folded(ctx, op, inputs, attrs)};
}

LUMEN_REGISTER_ONNX_CONVERTER("Unsqueeze", 1, [](NodeContext &ctx) {
  return convert_squeeze_like(ctx, "unsqueeze");
});
LUMEN_REGISTER_ONNX_CONVERTER("Squeeze", 1, [](NodeContext &ctx) {
  return convert_squeeze_like(ctx, "squeeze");
});

std::vector<Value *> convert_constant(NodeContext &ctx) {
  const Attributes &a = ctx.attrs();
  if (const Tensor *t = a.get_tensor("value")) return {ctx.constant(*t, 0)};
  if (a.has("value_float"))
    return {
        ctx.constant(Tensor::from_vector<float>({}, {float(a.get_float("value_float", 0))}), 0)};
  if (a.has("value_int"))
    return {ctx.constant(Tensor::from_vector<int64_t>({}, {a.get_int("value_int", 0)}), 0)};
  if (a.has("value_floats")) {
    const auto v = a.get_floats("value_floats", {});
    return {ctx.constant(
        Tensor::from_vector<float>({int64_t(v.size())}, std::vector<float>(v.begin(), v.end())),
        0)};
  }
  if (a.has("value_ints")) {
    const auto v = a.get_ints("value_ints", {});
    return {ctx.constant(Tensor::from_vector<int64_t>({int64_t(v.size())}, v), 0)};
  }
  ctx.fail(
      "needs a value attribute (value, value_float(s) or value_int(s)); sparse and string "
      "constants are not supported");
}
LUMEN_REGISTER_ONNX_CONVERTER("Constant", 1, convert_constant);

constexpr int64_t kMaxLoadTimeFillBytes = int64_t{64} << 10;

std::vector<Value *> convert_constant_of_shape(NodeContext &ctx) {
  Tensor fill = Tensor::from_vector<float>({1}, {0.f});
  if (const Tensor *value = ctx.attrs().get_tensor("value")) {
    if (value->numel() != 1) ctx.fail("value must hold one element, got ", value->numel());
    fill = value->contiguous().reshape(Shape{1});
  }
  if (holds_objects(fill.dtype())) ctx.fail("value must be a numeric or bool tensor");
  if (!ctx.constant_input(0))
    return {emit_folded(ctx, "constant_of_shape", {ctx.input(0)}, {{"value", fill}})};
  const std::vector<int64_t> dims = ctx.constant_ints(0, "shape");
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("negative dimension ", d, " in the requested shape");
    n = checked_mul(n, d);
  }
  // A large fill is not made at load time (a model could ask for any size): the node fills it
  // when it runs, in the memory plan like any other value.
  if (checked_mul(n, static_cast<int64_t>(dtype_size(fill.dtype()))) > kMaxLoadTimeFillBytes)
    return {ctx.emit("constant_of_shape", {ctx.input(0)}, {{"value", fill}})};
  Tensor out = Tensor::empty(Shape(dims), fill.dtype());
  const size_t elem = dtype_size(fill.dtype());
  auto *dst = static_cast<char *>(out.raw_data());
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * elem, fill.raw_data(), elem);
  return {ctx.constant(out, 0)};
}
LUMEN_REGISTER_ONNX_CONVERTER("ConstantOfShape", 9, convert_constant_of_shape);

// Shape/Size of a value whose shape is known at load time are constants; otherwise they are
// computed at run time.
std::vector<Value *> convert_shape(NodeContext &ctx) {
  Value *x = ctx.input(0);
  Attributes attrs;
  for (const char *name : {"start", "end"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_int(name, 0));
  if (!has_static_shape(x)) return {emit_folded(ctx, "shape", {x}, attrs)};
  const Shape &shape = x->shape();
  const auto r = static_cast<int64_t>(shape.rank());
  int64_t start = ctx.attrs().get_int("start", 0), end = ctx.attrs().get_int("end", r);
  start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
  std::vector<int64_t> dims(shape.dims().begin() + start,
                            shape.dims().begin() + std::max(start, end));
  return {ctx.constant(Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims), 0)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Shape", 1, convert_shape);

std::vector<Value *> convert_size(NodeContext &ctx) {
  Value *x = ctx.input(0);
  if (!has_static_shape(x)) return {emit_folded(ctx, "size", {x})};
  return {ctx.constant(Tensor::from_vector<int64_t>({}, {x->shape().numel()}), 0)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Size", 1, convert_size);

}  // namespace
}  // namespace lumen::onnx_import
