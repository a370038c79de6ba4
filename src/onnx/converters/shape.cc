// Shape and constant ONNX ops. Shape arguments given as inputs (Reshape's shape, Unsqueeze's axes
// from opset 13) must be constants for now; they become Lumen attributes.
#include <algorithm>
#include <cstring>
#include <set>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> convert_reshape(NodeContext &ctx) {
  std::vector<int64_t> shape =
      ctx.opset() >= 5 ? ctx.constant_ints(1, "shape") : ctx.attrs().get_ints("shape", {});
  return {ctx.emit("reshape", {ctx.input(0)},
                   {{"shape", shape}, {"allowzero", ctx.attrs().get_int("allowzero", 0)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Reshape", 1, convert_reshape);

std::vector<Value *> convert_flatten(NodeContext &ctx) {
  const Shape &shape = static_shape(ctx, ctx.input(0), "input");
  const int64_t axis_attr = ctx.attrs().get_int("axis", 1);
  const auto r = static_cast<int64_t>(shape.rank());
  if (axis_attr < -r || axis_attr > r) ctx.fail("axis ", axis_attr, " out of range for rank ", r);
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + r : axis_attr);
  int64_t rows = 1, cols = 1;
  for (size_t i = 0; i < shape.rank(); ++i)
    (i < axis ? rows : cols) = checked_mul(i < axis ? rows : cols, shape[i]);
  return {ctx.emit("reshape", {ctx.input(0)}, {{"shape", std::vector<int64_t>{rows, cols}}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Flatten", 1, convert_flatten);

LUMEN_REGISTER_ONNX_CONVERTER("Transpose", 1, same_op("transpose"));
LUMEN_REGISTER_ONNX_CONVERTER("Concat", 4, same_op("concat"));

// Unsqueeze/Squeeze on a value of known shape become a reshape.
std::vector<int64_t> axes_of(NodeContext &ctx) {
  if (ctx.opset() >= 13)
    return ctx.has_input(1) ? ctx.constant_ints(1, "axes") : std::vector<int64_t>{};
  return ctx.attrs().get_ints("axes", {});
}

std::vector<Value *> convert_unsqueeze(NodeContext &ctx) {
  const Shape &in = static_shape(ctx, ctx.input(0), "input");
  const auto axes = axes_of(ctx);
  const auto out_rank = static_cast<int64_t>(in.rank() + axes.size());
  std::set<int64_t> inserted;
  for (int64_t a : axes) {
    if (a < -out_rank || a >= out_rank)
      ctx.fail("axis ", a, " out of range for output rank ", out_rank);
    if (!inserted.insert(a < 0 ? a + out_rank : a).second) ctx.fail("axis ", a, " repeated");
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) dims.push_back(inserted.count(i) ? 1 : in[next++]);
  return {ctx.emit("reshape", {ctx.input(0)}, {{"shape", dims}, {"allowzero", int64_t{1}}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Unsqueeze", 1, convert_unsqueeze);

std::vector<Value *> convert_squeeze(NodeContext &ctx) {
  const Shape &in = static_shape(ctx, ctx.input(0), "input");
  std::set<size_t> removed;
  const auto axes = axes_of(ctx);
  for (int64_t a : axes) {
    const size_t axis = in.normalize_axis(a);
    if (in[axis] != 1) ctx.fail("cannot squeeze axis ", a, " of size ", in[axis]);
    removed.insert(axis);
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < in.rank(); ++i)
    if (axes.empty() ? in[i] != 1 : !removed.count(i)) dims.push_back(in[i]);
  return {ctx.emit("reshape", {ctx.input(0)}, {{"shape", dims}, {"allowzero", int64_t{1}}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Squeeze", 1, convert_squeeze);

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

std::vector<Value *> convert_constant_of_shape(NodeContext &ctx) {
  const std::vector<int64_t> dims = ctx.constant_ints(0, "shape");
  for (int64_t d : dims)
    if (d < 0) ctx.fail("negative dimension ", d, " in the requested shape");
  Tensor fill = Tensor::from_vector<float>({1}, {0.f});
  if (const Tensor *value = ctx.attrs().get_tensor("value")) {
    if (value->numel() != 1) ctx.fail("value must hold one element, got ", value->numel());
    fill = *value;
  }
  Tensor out = Tensor::empty(Shape(dims), fill.dtype());
  auto fill_as = [&](auto word) {
    std::memcpy(&word, fill.raw_data(), sizeof(word));
    std::fill_n(static_cast<decltype(word) *>(out.raw_data()), out.numel(), word);
  };
  switch (dtype_size(fill.dtype())) {
    case 1:
      fill_as(uint8_t{});
      break;
    case 2:
      fill_as(uint16_t{});
      break;
    case 4:
      fill_as(uint32_t{});
      break;
    default:
      fill_as(uint64_t{});
      break;
  }
  return {ctx.constant(out, 0)};
}
LUMEN_REGISTER_ONNX_CONVERTER("ConstantOfShape", 9, convert_constant_of_shape);

// Shape of a value whose shape is known at load time is a constant.
std::vector<Value *> convert_shape(NodeContext &ctx) {
  const Shape &shape = static_shape(ctx, ctx.input(0), "input");
  const auto r = static_cast<int64_t>(shape.rank());
  int64_t start = ctx.attrs().get_int("start", 0), end = ctx.attrs().get_int("end", r);
  start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
  std::vector<int64_t> dims(shape.dims().begin() + start,
                            shape.dims().begin() + std::max(start, end));
  return {ctx.constant(Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims), 0)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Shape", 1, convert_shape);

}  // namespace
}  // namespace lumen::onnx_import
