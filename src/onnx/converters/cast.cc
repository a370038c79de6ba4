// Cast and CastLike. Element types lumen lacks (string, float6, ...) are reported as not
// supported. `saturate` (opset 19+, float8 targets) and `round_mode` (opset 24+, float8e8m0
// targets) pass through to lumen's cast.
#include "onnx/converters/util.h"
#include "onnx/tensor_proto.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> cast_to(NodeContext &ctx, DType to) {
  if (ctx.input(0)->dtype() == to) return {ctx.input(0)};
  Attributes attrs{{"to", std::string(dtype_name(to))}};
  attrs.set("saturate", ctx.attrs().get_int("saturate", 1));
  attrs.set("round_mode", ctx.attrs().get_string("round_mode", "up"));
  return {ctx.emit("cast", {ctx.input(0)}, attrs)};
}

std::vector<Value *> convert_cast(NodeContext &ctx) {
  const int64_t to = ctx.attrs().get_int("to", -1);
  if (to < 0) ctx.fail("missing attribute 'to'");
  const std::string what = "Cast node '" + ctx.node().name() + "' attribute 'to'";
  return cast_to(ctx, dtype_from_onnx(static_cast<int>(to), what));
}
LUMEN_REGISTER_ONNX_CONVERTER("Cast", 6, convert_cast);

std::vector<Value *> convert_cast_like(NodeContext &ctx) {
  return cast_to(ctx, ctx.input(1)->dtype());
}
LUMEN_REGISTER_ONNX_CONVERTER("CastLike", 15, convert_cast_like);

}  // namespace
}  // namespace lumen::onnx_import
