// ONNX quantization ops onto Lumen's quantize family (src/graph/ops/quantize.cc):
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul, QLinearConv. QuantizeLinear/DequantizeLinear also take float8, float4e2m1,
// int4 and int2 quantized types (with QuantizeLinear's `saturate` for float8).
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

// The Lumen dtype of an ONNX TensorProto element type usable as a quantized type.
DType quant_dtype(NodeContext &ctx, int64_t onnx_type, const char *what) {
  switch (onnx_type) {
    case onnx::TensorProto::UINT8:
      return DType::UInt8;
    case onnx::TensorProto::INT8:
      return DType::Int8;
    case onnx::TensorProto::UINT16:
      return DType::UInt16;
    case onnx::TensorProto::INT16:
      return DType::Int16;
    case onnx::TensorProto::FLOAT:
      return DType::Float32;
    case onnx::TensorProto::FLOAT16:
      return DType::Float16;
    case onnx::TensorProto::BFLOAT16:
      return DType::BFloat16;
    case onnx::TensorProto::DOUBLE:
      return DType::Float64;
    case onnx::TensorProto::FLOAT8E4M3FN:
      return DType::Float8E4M3FN;
    case onnx::TensorProto::FLOAT8E4M3FNUZ:
      return DType::Float8E4M3FNUZ;
    case onnx::TensorProto::FLOAT8E5M2:
      return DType::Float8E5M2;
    case onnx::TensorProto::FLOAT8E5M2FNUZ:
      return DType::Float8E5M2FNUZ;
    case onnx::TensorProto::UINT4:
      return DType::UInt4;
    case onnx::TensorProto::INT4:
      return DType::Int4;
    case onnx::TensorProto::FLOAT4E2M1:
      return DType::Float4E2M1;
    case onnx::TensorProto::UINT2:
      return DType::UInt2;
    case onnx::TensorProto::INT2:
      return DType::Int2;
    default:
      break;
  }
  ctx.fail(what, " element type ", onnx_type, " is not supported");
}

// Axis / block_size attributes shared by QuantizeLinear and DequantizeLinear.
Attributes quant_attrs(NodeContext &ctx) {
  Attributes attrs{{"axis", ctx.attrs().get_int("axis", 1)}};
  const int64_t block = ctx.attrs().get_int("block_size", 0);
  if (block != 0) {
    if (ctx.opset() < 21) ctx.fail("block_size needs opset 21 or later");
    attrs.set("block_size", block);
  }
  return attrs;
}

std::vector<Value *> convert_quantize(NodeContext &ctx) {
  Attributes attrs = quant_attrs(ctx);
  if (ctx.attrs().has("output_dtype")) {
    const int64_t t = ctx.attrs().get_int("output_dtype", 0);
    if (t != 0) attrs.set("dtype", std::string(dtype_name(quant_dtype(ctx, t, "output_dtype"))));
  }
  if (ctx.attrs().has("precision")) {
    const int64_t p = ctx.attrs().get_int("precision", 0);
    if (p != 0 && quant_dtype(ctx, p, "precision") != ctx.input(0)->dtype())
      ctx.fail("a precision other than the input's dtype is not supported");
  }
  attrs.set("saturate", ctx.attrs().get_int("saturate", 1));
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return {ctx.emit("quantize_linear", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("QuantizeLinear", 10, convert_quantize);

std::vector<Value *> convert_dequantize(NodeContext &ctx) {
  Attributes attrs = quant_attrs(ctx);
  if (ctx.attrs().has("output_dtype")) {
    const int64_t t = ctx.attrs().get_int("output_dtype", 0);
    if (t != 0) attrs.set("dtype", std::string(dtype_name(quant_dtype(ctx, t, "output_dtype"))));
  }
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return {ctx.emit("dequantize_linear", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("DequantizeLinear", 10, convert_dequantize);

// The node's outputs from a multi-output Lumen op.
std::vector<Value *> multi(NodeContext &ctx, const std::string &op,
                           const std::vector<Value *> &inputs, const Attributes &attrs,
                           size_t count) {
  const std::string base =
      ctx.num_outputs() && !ctx.node().output(0).empty() ? ctx.node().output(0) : ctx.node().name();
  Node *node = ctx.graph().add_node(op, inputs, attrs, base + "/" + op);
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs() && k < count; ++k) outputs.push_back(node->output(k));
  return outputs;
}

std::vector<Value *> convert_dynamic_quantize(NodeContext &ctx) {
  return multi(ctx, "dynamic_quantize_linear", {ctx.input(0)}, {}, 3);
}
LUMEN_REGISTER_ONNX_CONVERTER("DynamicQuantizeLinear", 11, convert_dynamic_quantize);

// Optional inputs up to the last present one (nullptr for gaps).
std::vector<Value *> inputs_of(NodeContext &ctx, size_t max) {
  if (ctx.num_inputs() > max) ctx.fail("expected at most ", max, " inputs, got ", ctx.num_inputs());
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  return inputs;
}

std::vector<Value *> convert_matmul_integer(NodeContext &ctx) {
  return {ctx.emit("matmul_integer", inputs_of(ctx, 4))};
}
LUMEN_REGISTER_ONNX_CONVERTER("MatMulInteger", 10, convert_matmul_integer);

std::vector<Value *> convert_qlinear_matmul(NodeContext &ctx) {
  return {ctx.emit("qlinear_matmul", inputs_of(ctx, 8))};
}
LUMEN_REGISTER_ONNX_CONVERTER("QLinearMatMul", 10, convert_qlinear_matmul);

// Explicit 2-D conv attributes (strides, dilations, pads, group) for the weight input `w`.
Attributes conv_attrs(NodeContext &ctx, Value *x, Value *w) {
  const Shape &ws = static_shape(ctx, w, "weight");
  if (ws.rank() != 4) ctx.fail("only 2-D convolution is supported, weight ", ws.to_string());
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (ctx.attrs().has("kernel_shape") && ctx.attrs().get_ints("kernel_shape", {}) != kernel)
    ctx.fail("kernel_shape does not match the weight ", ws.to_string());
  const auto strides = ctx.attrs().get_ints("strides", {1, 1});
  const auto dilations = ctx.attrs().get_ints("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2)
    ctx.fail("strides/dilations must have 2 values");
  const Shape xs = x->has_shape() ? x->shape() : Shape{};
  Attributes attrs{
      {"strides", strides}, {"dilations", dilations}, {"group", ctx.attrs().get_int("group", 1)}};
  attrs.set("pads", resolve_pads(ctx, xs, kernel, strides, dilations));
  return attrs;
}

std::vector<Value *> convert_conv_integer(NodeContext &ctx) {
  const auto inputs = inputs_of(ctx, 4);
  return {ctx.emit("conv_integer", inputs, conv_attrs(ctx, ctx.input(0), ctx.input(1)))};
}
LUMEN_REGISTER_ONNX_CONVERTER("ConvInteger", 10, convert_conv_integer);

std::vector<Value *> convert_qlinear_conv(NodeContext &ctx) {
  const auto inputs = inputs_of(ctx, 9);
  return {ctx.emit("qlinear_conv", inputs, conv_attrs(ctx, ctx.input(0), ctx.input(3)))};
}
LUMEN_REGISTER_ONNX_CONVERTER("QLinearConv", 10, convert_qlinear_conv);

}  // namespace
}  // namespace lumen::onnx_import
