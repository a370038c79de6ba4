// ONNX RotaryEmbedding (23) onto Lumen's "rotary_embedding" op, attributes and inputs unchanged.
#include <string>
#include <vector>

#include "onnx/converters/util.h"
#include "onnx/tensor_proto.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> convert_rotary(NodeContext &ctx) {
  Attributes attrs;
  for (const char *name : {"interleaved", "rotary_embedding_dim", "num_heads"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_int(name, 0));
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1), ctx.input(2)};
  if (ctx.has_input(3)) inputs.push_back(ctx.input(3));
  return {ctx.emit("rotary_embedding", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("RotaryEmbedding", 23, convert_rotary);

// ONNX BitCast (26) onto Lumen's "bit_cast" with the target dtype by name.
std::vector<Value *> convert_bit_cast(NodeContext &ctx) {
  const DType to = dtype_from_onnx(int(ctx.attrs().get_int("to", -1)), "BitCast 'to'");
  return {ctx.emit("bit_cast", {ctx.input(0)}, {{"to", std::string(dtype_name(to))}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("BitCast", 26, convert_bit_cast);

// ONNX SwiGLU (28) onto Lumen's "swiglu".
std::vector<Value *> convert_swiglu(NodeContext &ctx) {
  Attributes attrs;
  attrs.set("alpha", ctx.attrs().get_float("alpha", 1.0));
  return {ctx.emit("swiglu", {ctx.input(0), ctx.input(1)}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("SwiGLU", 28, convert_swiglu);

}  // namespace
}  // namespace lumen::onnx_import
