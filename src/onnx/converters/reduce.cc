// ONNX reductions and axis scans: Reduce* (axes as an attribute, or as an optional input from
// opset 13 for ReduceSum and 18 for the others: both pass straight through, the Lumen op reads
// whichever is given), ArgMax/ArgMin, TopK, CumSum/CumProd, Hardmax and Einsum.
#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

LUMEN_REGISTER_ONNX_CONVERTER("ReduceSum", 1, same_op("reduce_sum"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceMean", 1, same_op("reduce_mean"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceMax", 1, same_op("reduce_max"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceMin", 1, same_op("reduce_min"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceProd", 1, same_op("reduce_prod"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceL1", 1, same_op("reduce_l1"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceL2", 1, same_op("reduce_l2"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceLogSum", 1, same_op("reduce_log_sum"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceLogSumExp", 1, same_op("reduce_log_sum_exp"));
LUMEN_REGISTER_ONNX_CONVERTER("ReduceSumSquare", 1, same_op("reduce_sum_square"));
LUMEN_REGISTER_ONNX_CONVERTER("ArgMax", 1, same_op("argmax"));
LUMEN_REGISTER_ONNX_CONVERTER("ArgMin", 1, same_op("argmin"));
LUMEN_REGISTER_ONNX_CONVERTER("CumSum", 11, same_op("cumsum"));
LUMEN_REGISTER_ONNX_CONVERTER("CumProd", 1, same_op("cumprod"));
LUMEN_REGISTER_ONNX_CONVERTER("Einsum", 12, same_op("einsum"));

// TopK: k is an attribute before opset 10 and an input from then on. Two outputs.
std::vector<Value *> convert_top_k(NodeContext &ctx) {
  Value *k = nullptr;
  Attributes attrs = ctx.attrs();
  if (ctx.opset() < 10) {
    if (!attrs.has("k")) ctx.fail("attribute k is required");
    k = ctx.constant(Tensor::from_vector<int64_t>({1}, {attrs.get_int("k", 0)}));
    attrs.erase("k");
  } else {
    k = ctx.input(1);
  }
  const std::string base = ctx.node().output_size() && !ctx.node().output(0).empty()
                               ? ctx.node().output(0)
                               : ctx.node().name();
  Node *node = ctx.graph().add_node("top_k", {ctx.input(0), k}, attrs, base + "/top_k");
  return {node->output(0), node->output(1)};
}
LUMEN_REGISTER_ONNX_CONVERTER("TopK", 1, convert_top_k);

// Hardmax before opset 13 flattens the dims from the axis (default 1) into one row.
std::vector<Value *> convert_hardmax(NodeContext &ctx) {
  Attributes attrs = ctx.attrs();
  if (ctx.opset() < 13) {
    attrs.set("axis", attrs.get_int("axis", 1));
    attrs.set("coerce_2d", int64_t{1});
  }
  return {ctx.emit("hardmax", {ctx.input(0)}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Hardmax", 1, convert_hardmax);

}  // namespace
}  // namespace lumen::onnx_import
