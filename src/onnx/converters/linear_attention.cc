// ONNX LinearAttention and CausalConvWithState (opset 27) onto Lumen's "linear_attention" and
// "causal_conv_with_state": inputs and attributes map 1:1; each op computes both outputs and the
// node returns the ones the model names.
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> emit_two(NodeContext &ctx, const std::string &op, size_t max_inputs,
                              const Attributes &attrs) {
  if (ctx.num_inputs() > max_inputs)
    ctx.fail("expected at most ", max_inputs, " inputs, got ", ctx.num_inputs());
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  const std::string base =
      ctx.num_outputs() && !ctx.node().output(0).empty() ? ctx.node().output(0) : ctx.node().name();
  Node *node = ctx.graph().add_node(op, inputs, attrs, base + "/" + op);
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs() && k < 2; ++k) outputs.push_back(node->output(k));
  return outputs;
}

std::vector<Value *> convert_linear_attention(NodeContext &ctx) {
  for (const char *name : {"q_num_heads", "kv_num_heads"})
    if (!ctx.attrs().has(name)) ctx.fail("attribute '", name, "' is required");
  // chunk_size is a tuning hint with no effect on the result.
  const Attributes attrs{{"q_num_heads", ctx.attrs().get_int("q_num_heads", 0)},
                         {"kv_num_heads", ctx.attrs().get_int("kv_num_heads", 0)},
                         {"scale", ctx.attrs().get_float("scale", 0.0)},
                         {"update_rule", ctx.attrs().get_string("update_rule", "gated_delta")}};
  return emit_two(ctx, "linear_attention", 6, attrs);
}
LUMEN_REGISTER_ONNX_CONVERTER("LinearAttention", 27, convert_linear_attention);

std::vector<Value *> convert_causal_conv(NodeContext &ctx) {
  const Attributes attrs{{"activation", ctx.attrs().get_string("activation", "none")}};
  return emit_two(ctx, "causal_conv_with_state", 4, attrs);
}
LUMEN_REGISTER_ONNX_CONVERTER("CausalConvWithState", 27, convert_causal_conv);

}  // namespace
}  // namespace lumen::onnx_import
