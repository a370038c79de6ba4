// ONNX NonMaxSuppression (10+) onto Lumen's "non_max_suppression" op; the optional threshold
// inputs pass through as inputs (read at run time).
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> convert_nms(NodeContext &ctx) {
  Attributes attrs;
  attrs.set("center_point_box", ctx.attrs().get_int("center_point_box", 0));
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1)};
  for (size_t i = 2; i < 5 && i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  while (inputs.size() > 2 && !inputs.back()) inputs.pop_back();
  return {ctx.emit("non_max_suppression", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("NonMaxSuppression", 10, convert_nms);

LUMEN_REGISTER_ONNX_CONVERTER("Det", 11, same_op("det"));

}  // namespace
}  // namespace lumen::onnx_import
