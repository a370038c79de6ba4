// Neural-network ONNX ops: convolution, pooling, dense layers, normalization, softmax.
#include <algorithm>
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

// The spatial attributes shared by Conv and the pools, resolved to Lumen's explicit form.
Attributes spatial_attrs(NodeContext &ctx, const Shape &x, const std::vector<int64_t> &kernel) {
  const size_t spatial = kernel.size();
  if (spatial == 0) ctx.fail("kernel_shape is required and must not be empty");
  const auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(spatial, 1));
  const auto dilations = ctx.attrs().get_ints("dilations", std::vector<int64_t>(spatial, 1));
  if (strides.size() != spatial || dilations.size() != spatial)
    ctx.fail("strides/dilations must have ", spatial, " values");
  Attributes attrs{{"kernel_shape", kernel}, {"strides", strides}, {"dilations", dilations}};
  attrs.set("pads", resolve_pads(ctx, x, kernel, strides, dilations));
  return attrs;
}

bool is_f32_or_f64(const Value *v) {
  return v->dtype() == DType::Float32 || v->dtype() == DType::Float64;
}

// A 1-D conv (audio front ends, wav2vec2's positional conv) as a conv2d over [N, C, 1, L]: the
// 2-D kernels (GEMM, depthwise, epilogue fusions) serve it; unsqueeze/squeeze are views.
// A weight computed in the graph (weight normalization, as the dynamo exporter writes wav2vec2's)
// is unsqueezed there too; constant folding makes it a constant.
Value *conv1d_as_conv2d(NodeContext &ctx, std::vector<Value *> inputs, const Attributes &attrs1d) {
  const Attributes axis2{{"axes", std::vector<int64_t>{2}}};
  inputs[0] = ctx.add("unsqueeze", {inputs[0]}, axis2);
  if (inputs[1]->is_constant()) {
    const Tensor &w = inputs[1]->constant();
    inputs[1] =
        ctx.constant(w.contiguous().reshape(Shape{w.shape()[0], w.shape()[1], 1, w.shape()[2]}));
  } else {
    inputs[1] = ctx.add("unsqueeze", {inputs[1]}, axis2);
  }
  const auto pads = attrs1d.get_ints("pads", {0, 0});
  Attributes attrs{{"strides", std::vector<int64_t>{1, attrs1d.get_ints("strides", {1})[0]}},
                   {"dilations", std::vector<int64_t>{1, attrs1d.get_ints("dilations", {1})[0]}},
                   {"pads", std::vector<int64_t>{0, pads[0], 0, pads[1]}},
                   {"group", attrs1d.get_int("group", 1)}};
  Value *y = ctx.add("conv2d", inputs, attrs);
  return ctx.emit("squeeze", {y}, {{"axes", std::vector<int64_t>{2}}});
}

// The 2-D ops (conv2d, max_pool2d, avg_pool2d) are the fast path; everything else (1-D, 3-D,
// other dtypes, pooling indices, dilated average pooling) goes to the N-d reference ops.
std::vector<Value *> convert_conv(NodeContext &ctx) {
  Value *x = ctx.input(0), *w = ctx.input(1);
  const Shape &ws = static_shape(ctx, w, "weight");
  if (ws.rank() < 3) ctx.fail("weight must be [M, C/group, k...], got ", ws.to_string());
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (ctx.attrs().has("kernel_shape") && ctx.attrs().get_ints("kernel_shape", {}) != kernel)
    ctx.fail("kernel_shape does not match the weight ", ws.to_string());
  Attributes attrs = spatial_attrs(ctx, x->has_shape() ? x->shape() : Shape{}, kernel);
  attrs.erase("kernel_shape");
  attrs.set("group", ctx.attrs().get_int("group", 1));
  std::vector<Value *> inputs{x, w};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  if (kernel.size() == 1 && is_f32_or_f64(x)) return {conv1d_as_conv2d(ctx, inputs, attrs)};
  const bool fast = kernel.size() == 2 && is_f32_or_f64(x);
  return {ctx.emit(fast ? "conv2d" : "conv_nd", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Conv", 1, convert_conv);

// ConvTranspose: explicit pads, or (auto_pad SAME_* / output_shape) pads derived from the
// wanted output size as ONNX defines them.
std::vector<Value *> convert_conv_transpose(NodeContext &ctx) {
  Value *x = ctx.input(0), *w = ctx.input(1);
  const Shape &ws = static_shape(ctx, w, "weight");
  if (ws.rank() < 3) ctx.fail("weight must be [C, M/group, k...], got ", ws.to_string());
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  const size_t k = kernel.size();
  if (ctx.attrs().has("kernel_shape") && ctx.attrs().get_ints("kernel_shape", {}) != kernel)
    ctx.fail("kernel_shape does not match the weight ", ws.to_string());
  const auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(k, 1));
  const auto dilations = ctx.attrs().get_ints("dilations", std::vector<int64_t>(k, 1));
  const auto opad = ctx.attrs().get_ints("output_padding", std::vector<int64_t>(k, 0));
  if (strides.size() != k || dilations.size() != k || opad.size() != k)
    ctx.fail("strides/dilations/output_padding must have ", k, " values");
  std::vector<int64_t> out_shape = ctx.attrs().get_ints("output_shape", {});
  if (out_shape.size() == k + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != k)
    ctx.fail("output_shape must have ", k, " values, got ", out_shape.size());
  const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
  Attributes attrs{{"strides", strides},
                   {"dilations", dilations},
                   {"output_padding", opad},
                   {"group", ctx.attrs().get_int("group", 1)}};
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const Shape &xs = static_shape(ctx, x, "input");
    if (xs.rank() != k + 2) ctx.fail("input ", xs.to_string(), " must have rank ", k + 2);
    if (out_shape.empty())
      for (size_t i = 0; i < k; ++i) out_shape.push_back(checked_mul(xs[i + 2], strides[i]));
    std::vector<int64_t> pads(2 * k);
    for (size_t i = 0; i < k; ++i) {
      const int64_t total = strides[i] * (xs[i + 2] - 1) + opad[i] +
                            ((kernel[i] - 1) * dilations[i] + 1) - out_shape[i];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[i + k] = auto_pad == "SAME_UPPER" ? total - half : half;
    }
    attrs.set("pads", pads);
  } else if (auto_pad == "NOTSET" || auto_pad == "VALID") {
    const auto pads = auto_pad == "VALID"
                          ? std::vector<int64_t>(2 * k, 0)
                          : ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (pads.size() != 2 * k) ctx.fail("pads has ", pads.size(), " values, expected ", 2 * k);
    attrs.set("pads", pads);
  } else {
    ctx.fail("unknown auto_pad '", auto_pad, "'");
  }
  if (!out_shape.empty()) attrs.set("output_shape", out_shape);
  std::vector<Value *> inputs{x, w};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return {ctx.emit("conv_transpose", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("ConvTranspose", 1, convert_conv_transpose);

// A 1-D pool as the 2-D one over [N, C, 1, L] (audio front ends): the 2-D kernels are the fast,
// vectorized ones; unsqueeze/squeeze are views.
Value *pool1d_as_pool2d(NodeContext &ctx, const std::string &op, Value *x, Attributes attrs) {
  const auto pads = attrs.get_ints("pads", {0, 0});
  attrs.set("kernel_shape", std::vector<int64_t>{1, attrs.get_ints("kernel_shape", {1})[0]});
  attrs.set("strides", std::vector<int64_t>{1, attrs.get_ints("strides", {1})[0]});
  attrs.set("pads", std::vector<int64_t>{0, pads[0], 0, pads[1]});
  if (attrs.has("dilations"))
    attrs.set("dilations", std::vector<int64_t>{1, attrs.get_ints("dilations", {1})[0]});
  Value *y = ctx.add(op, {ctx.add("unsqueeze", {x}, {{"axes", std::vector<int64_t>{2}}})}, attrs);
  return ctx.emit("squeeze", {y}, {{"axes", std::vector<int64_t>{2}}});
}

Converter pool(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    const bool want_indices = ctx.num_outputs() > 1 && !ctx.node().output(1).empty();
    Value *x = ctx.input(0);
    const auto kernel = ctx.attrs().get_ints("kernel_shape", {});
    Attributes attrs = spatial_attrs(ctx, x->has_shape() ? x->shape() : Shape{}, kernel);
    attrs.set("ceil_mode", ctx.attrs().get_int("ceil_mode", 0));
    bool fast = (kernel.size() == 2 || kernel.size() == 1) && is_f32_or_f64(x);
    const auto emit_fast = [&]() {
      return kernel.size() == 1 ? pool1d_as_pool2d(ctx, op, x, attrs) : ctx.emit(op, {x}, attrs);
    };
    if (op == "avg_pool2d") {
      const auto dil = ctx.attrs().get_ints("dilations", std::vector<int64_t>(kernel.size(), 1));
      if (dil != std::vector<int64_t>(kernel.size(), 1)) fast = false;
      attrs.set("count_include_pad", ctx.attrs().get_int("count_include_pad", 0));
      if (fast) {
        attrs.erase("dilations");
        return {emit_fast()};
      }
      return {ctx.emit("avg_pool_nd", {x}, attrs)};
    }
    if (op == "lp_pool") {
      attrs.set("p", ctx.attrs().get_float("p", 2.0));
      return {ctx.emit(op, {x}, attrs)};
    }
    // MaxPool.
    if (fast && !want_indices) return {emit_fast()};
    attrs.set("storage_order", ctx.attrs().get_int("storage_order", 0));
    const std::string base =
        ctx.node().output(0).empty() ? ctx.node().name() : ctx.node().output(0);
    Node *node = ctx.graph().add_node("max_pool_nd", {x}, attrs, base + "/max_pool_nd");
    if (want_indices) return {node->output(0), node->output(1)};
    return {node->output(0)};
  };
}
LUMEN_REGISTER_ONNX_CONVERTER("MaxPool", 1, pool("max_pool2d"));
LUMEN_REGISTER_ONNX_CONVERTER("AveragePool", 1, pool("avg_pool2d"));
LUMEN_REGISTER_ONNX_CONVERTER("LpPool", 1, pool("lp_pool"));
LUMEN_REGISTER_ONNX_CONVERTER("GlobalAveragePool", 1, same_op("global_avg_pool"));
LUMEN_REGISTER_ONNX_CONVERTER("GlobalMaxPool", 1, same_op("global_max_pool"));

std::vector<Value *> convert_max_unpool(NodeContext &ctx) {
  Attributes attrs{{"kernel_shape", ctx.attrs().get_ints("kernel_shape", {})}};
  const size_t k = ctx.attrs().get_ints("kernel_shape", {}).size();
  attrs.set("strides", ctx.attrs().get_ints("strides", std::vector<int64_t>(k, 1)));
  attrs.set("pads", ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * k, 0)));
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return {ctx.emit("max_unpool", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("MaxUnpool", 9, convert_max_unpool);

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

// training_mode=1 (opset 14+): batch statistics, and the updated running mean/var as outputs.
std::vector<Value *> convert_batch_norm_training(NodeContext &ctx) {
  const std::string base = ctx.node().output(0).empty() ? ctx.node().name() : ctx.node().output(0);
  Node *node = ctx.graph().add_node(
      "batch_norm_training", {ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4)},
      {{"epsilon", ctx.attrs().get_float("epsilon", 1e-5)},
       {"momentum", ctx.attrs().get_float("momentum", 0.9)}},
      base + "/batch_norm_training");
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs() && k < 3; ++k) outputs.push_back(node->output(k));
  return outputs;
}

std::vector<Value *> convert_batch_norm(NodeContext &ctx) {
  if (ctx.attrs().get_int("training_mode", 0) != 0) {
    if (ctx.opset() < 14) ctx.fail("training_mode needs opset 14 or later");
    return convert_batch_norm_training(ctx);
  }
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
    const int64_t axis_attr = ctx.attrs().get_int("axis", 1);
    if (!x->has_shape() || !x->shape().is_static()) {
      // Dims known at run time: flatten, normalize rows, and reshape back to x's shape.
      Value *flat = ctx.add("flatten", {x}, {{"axis", axis_attr}});
      Value *y = ctx.add(op, {flat}, {{"axis", int64_t{-1}}});
      return {ctx.emit("reshape", {y, ctx.add("shape", {x})})};
    }
    const Shape &shape = x->shape();
    const size_t axis = shape.normalize_axis(axis_attr);
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

// Swish (opset 24): x * sigmoid(alpha * x), from existing element-wise ops.
std::vector<Value *> convert_swish(NodeContext &ctx) {
  Value *x = ctx.input(0);
  const double alpha = ctx.attrs().get_float("alpha", 1.0);
  Value *scaled = x;
  if (alpha != 1.0) {
    Tensor a;
    if (x->dtype() == DType::Float32)
      a = Tensor::from_vector<float>({}, {float(alpha)});
    else if (x->dtype() == DType::Float64)
      a = Tensor::from_vector<double>({}, {alpha});
    else
      ctx.fail("alpha != 1 is not supported for ", dtype_name(x->dtype()), " inputs");
    scaled = ctx.add("mul", {x, ctx.constant(a)});
  }
  return {ctx.emit("mul", {x, ctx.add("sigmoid", {scaled})})};
}
LUMEN_REGISTER_ONNX_CONVERTER("Swish", 24, convert_swish);

// Inference-time identities: the output is the input value itself, no node.
std::vector<Value *> convert_dropout(NodeContext &ctx) {
  if (ctx.has_input(2)) {
    const Tensor *training = ctx.constant_input(2);
    if (!training || training->dtype() != DType::Bool || training->numel() != 1)
      ctx.fail("training_mode must be a constant bool scalar (a run-time value is not supported)");
    // Training with ratio 0 keeps everything, like inference; random dropping is not supported.
    const Tensor *ratio = ctx.has_input(1) ? ctx.constant_input(1) : nullptr;
    const bool zero_ratio = ratio && ratio->numel() == 1 &&
                            ((ratio->dtype() == DType::Float32 && ratio->data<float>()[0] == 0) ||
                             (ratio->dtype() == DType::Float64 && ratio->data<double>()[0] == 0));
    if (training->data<bool>()[0] && !zero_ratio)
      ctx.fail("training_mode with a non-zero ratio (random dropout) is not supported");
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
