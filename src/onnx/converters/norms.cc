// ONNX normalization ops that compute statistics from their input: LayerNormalization,
// RMSNormalization, InstanceNormalization, GroupNormalization, LpNormalization,
// MeanVarianceNormalization.
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

// Returns the node's outputs (all of a multi-output Lumen op), by ONNX output index; the values
// the ONNX node names keep those names (a graph output stays findable by its ONNX name).
std::vector<Value *> emit_multi(NodeContext &ctx, const std::string &op,
                                const std::vector<Value *> &inputs, const Attributes &attrs) {
  const std::string base =
      ctx.num_outputs() && !ctx.node().output(0).empty() ? ctx.node().output(0) : ctx.node().name();
  std::vector<std::string> names;
  for (size_t k = 0; k < ctx.num_outputs(); ++k) names.push_back(ctx.node().output(int(k)));
  Node *node = ctx.graph().add_node(op, inputs, attrs, base + "/" + op, names);
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs() && k < node->outputs().size(); ++k)
    outputs.push_back(node->output(k));
  return outputs;
}

std::vector<Value *> convert_layer_norm(NodeContext &ctx) {
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  const Attributes attrs{{"axis", ctx.attrs().get_int("axis", -1)},
                         {"epsilon", ctx.attrs().get_float("epsilon", 1e-5)},
                         {"stash_type", ctx.attrs().get_int("stash_type", 1)}};
  return emit_multi(ctx, "layer_norm", inputs, attrs);
}
LUMEN_REGISTER_ONNX_CONVERTER("LayerNormalization", 17, convert_layer_norm);

std::vector<Value *> convert_rms_norm(NodeContext &ctx) {
  return {ctx.emit("rms_norm", {ctx.input(0), ctx.input(1)},
                   {{"axis", ctx.attrs().get_int("axis", -1)},
                    {"epsilon", ctx.attrs().get_float("epsilon", 1e-5)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("RMSNormalization", 23, convert_rms_norm);

std::vector<Value *> convert_instance_norm(NodeContext &ctx) {
  return {ctx.emit("instance_norm", {ctx.input(0), ctx.input(1), ctx.input(2)},
                   {{"epsilon", ctx.attrs().get_float("epsilon", 1e-5)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("InstanceNormalization", 1, convert_instance_norm);

std::vector<Value *> convert_group_norm(NodeContext &ctx) {
  if (!ctx.attrs().has("num_groups")) ctx.fail("attribute 'num_groups' is required");
  return {ctx.emit("group_norm", {ctx.input(0), ctx.input(1), ctx.input(2)},
                   {{"num_groups", ctx.attrs().get_int("num_groups", 1)},
                    {"epsilon", ctx.attrs().get_float("epsilon", 1e-5)},
                    {"scale_per_group", int64_t(ctx.opset() < 21 ? 1 : 0)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("GroupNormalization", 18, convert_group_norm);

std::vector<Value *> convert_lp_norm(NodeContext &ctx) {
  return {
      ctx.emit("lp_norm", {ctx.input(0)},
               {{"axis", ctx.attrs().get_int("axis", -1)}, {"p", ctx.attrs().get_int("p", 2)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("LpNormalization", 1, convert_lp_norm);

std::vector<Value *> convert_mvn(NodeContext &ctx) {
  return {ctx.emit("mean_variance_norm", {ctx.input(0)},
                   {{"axes", ctx.attrs().get_ints("axes", {0, 2, 3})}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("MeanVarianceNormalization", 9, convert_mvn);

}  // namespace
}  // namespace lumen::onnx_import
