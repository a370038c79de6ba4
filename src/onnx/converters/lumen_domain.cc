// The "lumen" ONNX domain (version 1): Lumen ops stored by name in an ONNX file, as written by
// lumen's save_optimized for ops that have no identical ONNX op (fused_conv, fused_gemm, ...).
// A node's op_type is the Lumen op name and its attributes are the Lumen attributes, so each
// converter adds the op unchanged; Lumen's own inference then checks arity and attributes.
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "onnx/converter.h"

namespace lumen::onnx_import {
namespace {

constexpr const char *kLumenDomain = "lumen";

std::vector<Value *> convert_lumen_op(NodeContext &ctx) {
  const std::string &op = ctx.node().op_type();
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  const OpSchema &schema = get_op(op);
  if (schema.num_outputs == 1) return {ctx.emit(op, inputs, ctx.attrs())};
  // Several outputs: Lumen names them "<node>:<i>", which is how the exporter names them too.
  Node *node = ctx.graph().add_node(op, inputs, ctx.attrs(), ctx.node().name());
  std::vector<Value *> outputs;
  for (size_t k = 0; k < ctx.num_outputs() && k < node->outputs().size(); ++k)
    outputs.push_back(node->output(k));
  return outputs;
}

}  // namespace

// Looked up by name when a model is imported, not registered per op at load time: the op table
// fills during static initialization in an order this file cannot rely on.
const ConverterEntry *find_lumen_domain_converter(std::string_view op_type) {
  static const ConverterEntry entry{kLumenDomain, "*", 1, convert_lumen_op};
  return find_op(op_type) ? &entry : nullptr;
}

}  // namespace lumen::onnx_import
