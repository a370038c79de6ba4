// If, Loop and Scan: their subgraphs become Graph attributes of Lumen's if/loop/scan, and every
// value a subgraph reads from an enclosing graph becomes an explicit input of the node (a capture)
// and of the subgraph.
#include <algorithm>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

// The node's outputs by the ONNX names (empty: Lumen names it), padded to `count`.
std::vector<std::string> output_names(NodeContext &ctx, size_t count) {
  if (ctx.num_outputs() > count)
    ctx.fail("has ", ctx.num_outputs(), " outputs, its subgraph gives ", count);
  std::vector<std::string> names(count);
  for (size_t k = 0; k < ctx.num_outputs(); ++k) names[k] = ctx.node().output(static_cast<int>(k));
  return names;
}

std::vector<Value *> add_control_flow(NodeContext &ctx, const std::string &op,
                                      std::vector<Value *> inputs,
                                      const std::vector<std::string> &captures, Attributes attrs,
                                      size_t num_outputs) {
  for (const std::string &name : captures) inputs.push_back(ctx.subgraphs().lookup(name));
  Node *node =
      ctx.graph().add_node(op, inputs, attrs, ctx.node().name(), output_names(ctx, num_outputs));
  return node->outputs();
}

void add_free_names(const SubgraphImporter &importer, const onnx::GraphProto &g,
                    std::vector<std::string> &names) {
  for (const std::string &name : importer.free_names(g))
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

std::vector<Value *> convert_if(NodeContext &ctx) {
  const SubgraphImporter &importer = ctx.subgraphs();
  const onnx::GraphProto &then_proto = ctx.graph_attribute("then_branch");
  const onnx::GraphProto &else_proto = ctx.graph_attribute("else_branch");
  std::vector<std::string> captures;  // both branches take every capture of either
  add_free_names(importer, then_proto, captures);
  add_free_names(importer, else_proto, captures);
  auto then_branch = importer.import(then_proto, {}, captures);
  auto else_branch = importer.import(else_proto, {}, captures);
  const size_t count = then_branch->outputs().size();
  return add_control_flow(ctx, "if", {ctx.input(0)}, captures,
                          {{"then_branch", then_branch}, {"else_branch", else_branch}}, count);
}
LUMEN_REGISTER_ONNX_CONVERTER("If", 1, convert_if);

// Loop-carried values may change shape from one iteration to the next: the body takes them with
// unknown shapes (its plans are made per shape at run time).
std::vector<Value *> convert_loop(NodeContext &ctx) {
  const SubgraphImporter &importer = ctx.subgraphs();
  const onnx::GraphProto &body_proto = ctx.graph_attribute("body");
  if (ctx.num_inputs() < 2) ctx.fail("needs inputs M and cond (each may be empty)");
  const size_t n = ctx.num_inputs() - 2;
  std::vector<SubgraphInputType> formal{{DType::Int64, Shape{}}, {DType::Bool, Shape{}}};
  std::vector<Value *> inputs{ctx.has_input(0) ? ctx.input(0) : nullptr,
                              ctx.has_input(1) ? ctx.input(1) : nullptr};
  for (size_t i = 0; i < n; ++i) {
    Value *v = ctx.input(2 + i);
    formal.push_back({v->dtype(), std::nullopt, v->element_type()});
    inputs.push_back(v);
  }
  const std::vector<std::string> captures = importer.free_names(body_proto);
  auto body = importer.import(body_proto, formal, captures);
  if (body->outputs().size() < 1 + n)
    ctx.fail("the body has ", body->outputs().size(), " outputs, needs at least ", 1 + n);
  return add_control_flow(ctx, "loop", inputs, captures,
                          {{"body", body}, {"num_carried", static_cast<int64_t>(n)}},
                          body->outputs().size() - 1);
}
LUMEN_REGISTER_ONNX_CONVERTER("Loop", 1, convert_loop);

std::vector<Value *> convert_scan(NodeContext &ctx) {
  const SubgraphImporter &importer = ctx.subgraphs();
  const onnx::GraphProto &body_proto = ctx.graph_attribute("body");
  const int64_t m = ctx.attrs().get_int("num_scan_inputs", 0);
  if (m < 1 || m > static_cast<int64_t>(ctx.num_inputs()))
    ctx.fail("num_scan_inputs ", m, " does not fit the ", ctx.num_inputs(), " inputs");
  const size_t n = ctx.num_inputs() - static_cast<size_t>(m);
  const auto axes = ctx.attrs().get_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  if (axes.size() != static_cast<size_t>(m)) ctx.fail("scan_input_axes must have ", m, " values");
  std::vector<SubgraphInputType> formal;
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    Value *v = ctx.input(i);
    inputs.push_back(v);
    std::optional<Shape> shape;  // states: any shape; slices: the input's without the scan axis
    if (i >= n && v->has_shape() && v->shape().is_static()) {
      std::vector<int64_t> dims = v->shape().dims();
      dims.erase(dims.begin() +
                 static_cast<std::ptrdiff_t>(v->shape().normalize_axis(axes[i - n], "scan axis")));
      shape = Shape(dims);
    }
    formal.push_back({v->dtype(), shape, v->element_type()});
  }
  const std::vector<std::string> captures = importer.free_names(body_proto);
  auto body = importer.import(body_proto, formal, captures);
  if (body->outputs().size() < n)
    ctx.fail("the body has ", body->outputs().size(), " outputs, needs at least ", n);
  const size_t k = body->outputs().size() - n;
  Attributes attrs{{"body", body},
                   {"num_carried", static_cast<int64_t>(n)},
                   {"num_scan_inputs", m},
                   {"scan_input_axes", axes}};
  for (const char *name : {"scan_input_directions", "scan_output_axes", "scan_output_directions"}) {
    const size_t count = name == std::string("scan_input_directions") ? static_cast<size_t>(m) : k;
    const auto values = ctx.attrs().get_ints(name, std::vector<int64_t>(count, 0));
    if (values.size() != count) ctx.fail(name, " must have ", count, " values");
    attrs.set(name, values);
  }
  return add_control_flow(ctx, "scan", inputs, captures, attrs, body->outputs().size());
}
LUMEN_REGISTER_ONNX_CONVERTER("Scan", 9, convert_scan);  // Scan-8 (batch axis) is not

}  // namespace
}  // namespace lumen::onnx_import
