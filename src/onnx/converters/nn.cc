// Neural-network ONNX ops: convolution, pooling, dense layers, normalization, softmax.
#include <algorithm>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

// The spatial attributes shared by Conv and the pools, resolved to Lumen's explicit form.
Attributes spatial_attrs(NodeContext &ctx, const Shape &x, const std::vector<int64_t> &kernel) {
  const size_t spatial = kernel.size();
  if (spatial != 2)
    ctx.fail("only 2-D spatial ops are supported, got kernel ", Shape(kernel).to_string());
  const auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(spatial, 1));
  const auto dilations = ctx.attrs().get_ints("dilations", std::vector<int64_t>(spatial, 1));
  if (strides.size() != spatial || dilations.size() != spatial)
    ctx.fail("strides/dilations must have ", spatial, " values");
  Attributes attrs{{"kernel_shape", kernel}, {"strides", strides}, {"dilations", dilations}};
  attrs.set("pads", resolve_pads(ctx, x, kernel, strides, dilations));
  return attrs;
}

std::vector<Value *> convert_conv(NodeContext &ctx) {
  Value *x = ctx.input(0), *w = ctx.input(1);
  const Shape &ws = static_shape(ctx, w, "weight");
  if (ws.rank() != 4) ctx.fail("only 2-D convolution is supported (weight ", ws.to_string(), ")");
  const std::vector<int64_t> kernel{ws[2], ws[3]};
  if (ctx.attrs().has("kernel_shape") && ctx.attrs().get_ints("kernel_shape", {}) != kernel)
    ctx.fail("kernel_shape does not match the weight ", ws.to_string());
  Attributes attrs = spatial_attrs(ctx, x->has_shape() ? x->shape() : Shape{}, kernel);
  attrs.erase("kernel_shape");
  attrs.set("group", ctx.attrs().get_int("group", 1));
  std::vector<Value *> inputs{x, w};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return {ctx.emit("conv2d", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Conv", 1, convert_conv);

Converter pool(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    if (ctx.num_outputs() > 1 && !ctx.node().output(1).empty())
      ctx.fail("the Indices output is not supported");
    Value *x = ctx.input(0);
    const auto kernel = ctx.attrs().get_ints("kernel_shape", {});
    Attributes attrs = spatial_attrs(ctx, x->has_shape() ? x->shape() : Shape{}, kernel);
    attrs.set("ceil_mode", ctx.attrs().get_int("ceil_mode", 0));
    if (op == "avg_pool2d") {
      attrs.erase("dilations");
      if (ctx.attrs().get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1})
        ctx.fail("dilated average pooling is not supported");
      attrs.set("count_include_pad", ctx.attrs().get_int("count_include_pad", 0));
    }
    return {ctx.emit(op, {x}, attrs)};
  };
}
LUMEN_REGISTER_ONNX_CONVERTER("MaxPool", 1, pool("max_pool2d"));
LUMEN_REGISTER_ONNX_CONVERTER("AveragePool", 1, pool("avg_pool2d"));
LUMEN_REGISTER_ONNX_CONVERTER("GlobalAveragePool", 1, same_op("global_avg_pool"));
LUMEN_REGISTER_ONNX_CONVERTER("GlobalMaxPool", 1, same_op("global_max_pool"));

std::vector<Value *> convert_gemm(NodeContext &ctx) {
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  Attributes attrs{{"alpha", ctx.attrs().get_float("alpha", 1.0)},
                   {"beta", ctx.attrs().get_float("beta", 1.0)},
                   {"transA", ctx.attrs().get_int("transA", 0)},
                   {"transB", ctx.attrs().get_int("transB", 0)}};
  return {ctx.emit("gemm", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Gemm", 7, convert_gemm);
LUMEN_REGISTER_ONNX_CONVERTER("MatMul", 1, same_op("matmul"));

std::vector<Value *> convert_batch_norm(NodeContext &ctx) {
  if (ctx.attrs().get_int("training_mode", 0) != 0) ctx.fail("training_mode=1 is not supported");
  for (size_t k = 1; k < ctx.num_outputs(); ++k)
    if (!ctx.node().output(static_cast<int>(k)).empty())
      ctx.fail("the training outputs (running mean/var) are not supported");
  return {ctx.emit("batch_norm",
                   {ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4)},
                   {{"epsilon", ctx.attrs().get_float("epsilon", 1e-5)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("BatchNormalization", 7, convert_batch_norm);

std::vector<Value *> convert_lrn(NodeContext &ctx) {
  if (!ctx.attrs().has("size")) ctx.fail("attribute 'size' is required");
  return {ctx.emit("lrn", {ctx.input(0)},
                   {{"size", ctx.attrs().get_int("size", 0)},
                    {"alpha", ctx.attrs().get_float("alpha", 1e-4)},
                    {"beta", ctx.attrs().get_float("beta", 0.75)},
                    {"bias", ctx.attrs().get_float("bias", 1.0)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("LRN", 1, convert_lrn);

// Before opset 13, Softmax flattens the input to 2-D at `axis` (default 1) and normalizes rows.
Converter softmax(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    Value *x = ctx.input(0);
    if (ctx.opset() >= 13) return {ctx.emit(op, {x}, {{"axis", ctx.attrs().get_int("axis", -1)}})};
    const Shape &shape = static_shape(ctx, x, "input");
    const size_t axis = shape.normalize_axis(ctx.attrs().get_int("axis", 1));
    if (axis + 1 == shape.rank()) return {ctx.emit(op, {x}, {{"axis", int64_t{-1}}})};
    int64_t rows = 1, cols = 1;
    for (size_t i = 0; i < shape.rank(); ++i) (i < axis ? rows : cols) *= shape[i];
    Value *flat = ctx.add("reshape", {x}, {{"shape", std::vector<int64_t>{rows, cols}}});
    Value *y = ctx.add(op, {flat}, {{"axis", int64_t{-1}}});
    return {ctx.emit("reshape", {y}, {{"shape", shape.dims()}})};
  };
}
LUMEN_REGISTER_ONNX_CONVERTER("Softmax", 1, softmax("softmax"));
LUMEN_REGISTER_ONNX_CONVERTER("LogSoftmax", 1, softmax("log_softmax"));

// Inference-time identities: the output is the input value itself, no node.
std::vector<Value *> convert_dropout(NodeContext &ctx) {
  if (ctx.has_input(2)) {
    const Tensor *training = ctx.constant_input(2);
    if (!training || training->dtype() != DType::Bool || training->numel() != 1 ||
        training->data<bool>()[0])
      ctx.fail("training_mode must be a constant false");
  }
  std::vector<Value *> outputs{ctx.input(0)};
  if (ctx.num_outputs() > 1 && !ctx.node().output(1).empty()) {
    // In inference the mask keeps everything: all true, in the input's shape.
    Tensor mask = Tensor::empty(static_shape(ctx, ctx.input(0), "input"), DType::Bool);
    std::fill_n(mask.data<bool>(), mask.numel(), true);
    outputs.push_back(ctx.constant(mask, 1));
  }
  return outputs;
}
LUMEN_REGISTER_ONNX_CONVERTER("Dropout", 1, convert_dropout);
LUMEN_REGISTER_ONNX_CONVERTER("Identity", 1, [](NodeContext &ctx) -> std::vector<Value *> {
  return {ctx.input(0)};
});

}  // namespace
}  // namespace lumen::onnx_import
