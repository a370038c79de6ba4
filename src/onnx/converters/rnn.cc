// ONNX RNN, GRU and LSTM onto Lumen's "rnn", "gru" and "lstm" ops (src/graph/ops/rnn.cc): the
// inputs and attributes map 1:1; the op always computes all its outputs and the node returns the
// ones the model names.
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

Converter recurrent(const std::string &op, size_t max_inputs, size_t num_outputs) {
  return [op, max_inputs, num_outputs](NodeContext &ctx) -> std::vector<Value *> {
    if (ctx.num_inputs() > max_inputs)
      ctx.fail("expected at most ", max_inputs, " inputs, got ", ctx.num_inputs());
    std::vector<Value *> inputs;
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();
    Attributes attrs;
    for (const char *name : {"hidden_size", "layout", "linear_before_reset"})
      if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_int(name, 0));
    if (ctx.attrs().has("clip")) attrs.set("clip", ctx.attrs().get_float("clip", 0.0));
    if (ctx.attrs().has("direction"))
      attrs.set("direction", ctx.attrs().get_string("direction", "forward"));
    for (const char *name : {"activation_alpha", "activation_beta"})
      if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_floats(name, {}));
    if (ctx.attrs().has("activations"))
      attrs.set("activations", ctx.attrs().items().at("activations"));
    if (ctx.attrs().get_int("input_forget", 0) != 0) ctx.fail("input_forget=1 is not supported");
    const std::string base = ctx.num_outputs() && !ctx.node().output(0).empty()
                                 ? ctx.node().output(0)
                                 : ctx.node().name();
    Node *node = ctx.graph().add_node(op, inputs, attrs, base + "/" + op);
    std::vector<Value *> outputs;
    for (size_t k = 0; k < ctx.num_outputs() && k < num_outputs; ++k)
      outputs.push_back(node->output(k));
    return outputs;
  };
}

LUMEN_REGISTER_ONNX_CONVERTER("RNN", 7, recurrent("rnn", 6, 2));
LUMEN_REGISTER_ONNX_CONVERTER("GRU", 7, recurrent("gru", 6, 2));
LUMEN_REGISTER_ONNX_CONVERTER("LSTM", 7, recurrent("lstm", 8, 3));

}  // namespace
}  // namespace lumen::onnx_import
