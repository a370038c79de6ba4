// ONNX Attention (opsets 23-25) onto Lumen's "attention" op: the inputs and attributes map 1:1;
// the op always computes its four outputs and the node returns the ones the model names.
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> convert_attention(NodeContext &ctx) {
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs() && i < 7; ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  if (ctx.num_inputs() > 7) ctx.fail("expected at most 7 inputs, got ", ctx.num_inputs());
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  if (inputs.size() > 6 && ctx.opset() < 24) ctx.fail("nonpad_kv_seqlen needs opset 24 or later");
  Attributes attrs;
  for (const char *name : {"q_num_heads", "kv_num_heads", "is_causal", "qk_matmul_output_mode",
                           "softmax_precision", "left_window_size", "right_window_size"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_int(name, 0));
  for (const char *name : {"scale", "softcap"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_float(name, 0.0));
  const std::string base =
      ctx.num_outputs() && !ctx.node().output(0).empty() ? ctx.node().output(0) : ctx.node().name();
  Node *node = ctx.graph().add_node("attention", inputs, attrs, base + "/attention");
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs() && k < 4; ++k) outputs.push_back(node->output(k));
  return outputs;
}
LUMEN_REGISTER_ONNX_CONVERTER("Attention", 23, convert_attention);

}  // namespace
}  // namespace lumen::onnx_import
