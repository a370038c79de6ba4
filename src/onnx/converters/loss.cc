// NegativeLogLikelihoodLoss (opset 12) and SoftmaxCrossEntropyLoss (opset 12): one Lumen op each,
// attributes (reduction, ignore_index) passed through. SoftmaxCrossEntropyLoss's optional second
// output (log_prob) is the Lumen op's second output.
#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> loss_inputs(NodeContext &ctx) {
  std::vector<Value *> inputs = {ctx.input(0), ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return inputs;
}

std::vector<Value *> convert_nll(NodeContext &ctx) {
  return {ctx.emit("negative_log_likelihood_loss", loss_inputs(ctx), ctx.attrs())};
}
LUMEN_REGISTER_ONNX_CONVERTER("NegativeLogLikelihoodLoss", 12, convert_nll);

std::vector<Value *> convert_sce(NodeContext &ctx) {
  const std::vector<Value *> inputs = loss_inputs(ctx);
  const std::string base = ctx.node().output_size() && !ctx.node().output(0).empty()
                               ? ctx.node().output(0)
                               : ctx.node().name();
  Node *node = ctx.graph().add_node("softmax_cross_entropy_loss", inputs, ctx.attrs(),
                                    base + "/softmax_cross_entropy_loss");
  return {node->output(0), node->output(1)};
}
LUMEN_REGISTER_ONNX_CONVERTER("SoftmaxCrossEntropyLoss", 12, convert_sce);

}  // namespace
}  // namespace lumen::onnx_import
