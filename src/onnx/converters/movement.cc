// Data-movement ONNX ops: Expand, Tile, Slice, Split, Pad, Range, Trilu, DepthToSpace,
// SpaceToDepth, EyeLike, ReverseSequence, CenterCropPad, Col2Im. Arguments ONNX gives as tensors
// are passed to the Lumen op as inputs (read at run time when not constant); arguments older opsets
// give as attributes become constant inputs.
#include <string>
#include <vector>

#include "lumen/ops.h"
#include "onnx/converters/util.h"
#include "onnx/tensor_proto.h"

namespace lumen::onnx_import {
namespace {

// The node's inputs (nullptr for omitted ones), trailing omitted ones dropped.
std::vector<Value *> all_inputs(NodeContext &ctx) {
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  return inputs;
}

Value *ints_constant(NodeContext &ctx, const std::vector<int64_t> &v) {
  return ctx.constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

Converter pass_inputs(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    return {emit_folded(ctx, op, all_inputs(ctx), ctx.attrs())};
  };
}

LUMEN_REGISTER_ONNX_CONVERTER("Expand", 8, pass_inputs("expand"));
LUMEN_REGISTER_ONNX_CONVERTER("Tile", 6, pass_inputs("tile"));
LUMEN_REGISTER_ONNX_CONVERTER("Range", 11, pass_inputs("range"));
LUMEN_REGISTER_ONNX_CONVERTER("ReverseSequence", 10, pass_inputs("reverse_sequence"));
LUMEN_REGISTER_ONNX_CONVERTER("CenterCropPad", 18, pass_inputs("center_crop_pad"));
LUMEN_REGISTER_ONNX_CONVERTER("SpaceToDepth", 1, pass_inputs("space_to_depth"));
LUMEN_REGISTER_ONNX_CONVERTER("Col2Im", 18, pass_inputs("col2im"));

std::vector<Value *> convert_trilu(NodeContext &ctx) {
  return {emit_folded(ctx, "trilu", all_inputs(ctx), {{"upper", ctx.attrs().get_int("upper", 1)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Trilu", 14, convert_trilu);

std::vector<Value *> convert_depth_to_space(NodeContext &ctx) {
  return {emit_folded(ctx, "depth_to_space", {ctx.input(0)},
                      {{"blocksize", ctx.attrs().get_int("blocksize", 0)},
                       {"mode", ctx.attrs().get_string("mode", "DCR")}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("DepthToSpace", 1, convert_depth_to_space);

std::vector<Value *> convert_eye_like(NodeContext &ctx) {
  Attributes attrs{{"k", ctx.attrs().get_int("k", 0)}};
  if (ctx.attrs().has("dtype"))
    attrs.set("dtype", std::string(dtype_name(dtype_from_onnx(
                           static_cast<int>(ctx.attrs().get_int("dtype", 1)), "dtype"))));
  return {emit_folded(ctx, "eye_like", {ctx.input(0)}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("EyeLike", 9, convert_eye_like);

// Slice-1: starts, ends, axes are attributes; from opset 10 they (and steps) are inputs.
std::vector<Value *> convert_slice(NodeContext &ctx) {
  if (ctx.opset() >= 10) return {emit_folded(ctx, "slice", all_inputs(ctx))};
  std::vector<Value *> inputs{ctx.input(0), ints_constant(ctx, ctx.attrs().get_ints("starts", {})),
                              ints_constant(ctx, ctx.attrs().get_ints("ends", {}))};
  if (ctx.attrs().has("axes"))
    inputs.push_back(ints_constant(ctx, ctx.attrs().get_ints("axes", {})));
  return {emit_folded(ctx, "slice", inputs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Slice", 1, convert_slice);

// One Lumen split op per ONNX output, each producing its part (attr index).
std::vector<Value *> convert_split(NodeContext &ctx) {
  Attributes attrs{{"axis", ctx.attrs().get_int("axis", 0)}};
  std::vector<Value *> inputs{ctx.input(0)};
  if (ctx.opset() < 13 && ctx.attrs().has("split")) {
    attrs.set("split", ctx.attrs().get_ints("split", {}));
  } else if (ctx.opset() >= 13 && ctx.constant_input(1)) {
    attrs.set("split", ctx.constant_ints(1, "split"));
  } else if (ctx.opset() >= 13 && ctx.has_input(1)) {
    inputs.push_back(ctx.input(1));
  } else {
    const auto n = static_cast<int64_t>(ctx.num_outputs());
    if (ctx.attrs().has("num_outputs") && ctx.attrs().get_int("num_outputs", 0) != n)
      ctx.fail("num_outputs ", ctx.attrs().get_int("num_outputs", 0), " but the node has ", n,
               " outputs");
    attrs.set("num_outputs", n);
  }
  if (attrs.has("split") && attrs.get_ints("split", {}).size() != ctx.num_outputs())
    ctx.fail("split has ", attrs.get_ints("split", {}).size(), " sizes but the node has ",
             ctx.num_outputs(), " outputs");
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs(); ++k) {
    attrs.set("index", static_cast<int64_t>(k));
    outputs.push_back(emit_folded(ctx, "split", inputs, attrs, k));
  }
  return outputs;
}
LUMEN_REGISTER_ONNX_CONVERTER("Split", 2, convert_split);

// Pad-2: pads and value are attributes (Pad-1 called pads "paddings"); from opset 11 pads and
// constant_value are inputs, and opset 18 adds axes.
std::vector<Value *> convert_pad(NodeContext &ctx) {
  Attributes attrs{{"mode", ctx.attrs().get_string("mode", "constant")}};
  if (ctx.opset() >= 11) return {emit_folded(ctx, "pad", all_inputs(ctx), attrs)};
  const char *name = ctx.opset() < 2 ? "paddings" : "pads";
  attrs.set("value", ctx.attrs().get_float("value", 0.0));
  return {emit_folded(ctx, "pad",
                      {ctx.input(0), ints_constant(ctx, ctx.attrs().get_ints(name, {}))}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Pad", 1, convert_pad);

}  // namespace
}  // namespace lumen::onnx_import
