// ONNX indexing ops: Gather, GatherElements, GatherND, ScatterElements (and its old name
// Scatter), ScatterND, TensorScatter, OneHot, NonZero, Compress and Unique. Each maps 1:1 onto a
// Lumen op; index tensors stay inputs, so indices computed at run time work.
#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

LUMEN_REGISTER_ONNX_CONVERTER("Gather", 1, same_op("gather"));
LUMEN_REGISTER_ONNX_CONVERTER("GatherElements", 11, same_op("gather_elements"));
LUMEN_REGISTER_ONNX_CONVERTER("GatherND", 11, same_op("gather_nd"));
LUMEN_REGISTER_ONNX_CONVERTER("ScatterElements", 11, same_op("scatter_elements"));
LUMEN_REGISTER_ONNX_CONVERTER("Scatter", 9, same_op("scatter_elements"));
LUMEN_REGISTER_ONNX_CONVERTER("ScatterND", 11, same_op("scatter_nd"));
LUMEN_REGISTER_ONNX_CONVERTER("OneHot", 9, same_op("one_hot"));
LUMEN_REGISTER_ONNX_CONVERTER("NonZero", 9, same_op("non_zero"));
LUMEN_REGISTER_ONNX_CONVERTER("Compress", 9, same_op("compress"));
LUMEN_REGISTER_ONNX_CONVERTER("TensorScatter", 24, same_op("tensor_scatter"));

// Unique has four outputs (values, first indices, inverse indices, counts).
std::vector<Value *> convert_unique(NodeContext &ctx) {
  const std::string base = ctx.node().output_size() && !ctx.node().output(0).empty()
                               ? ctx.node().output(0)
                               : ctx.node().name();
  Node *node = ctx.graph().add_node("unique", {ctx.input(0)}, ctx.attrs(), base + "/unique");
  return {node->output(0), node->output(1), node->output(2), node->output(3)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Unique", 11, convert_unique);

}  // namespace
}  // namespace lumen::onnx_import
