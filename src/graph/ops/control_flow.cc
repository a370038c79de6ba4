// Control flow: ops whose semantics are subgraphs (Graph attributes), run by the executor.
//   if(cond, captures...)          attrs then_branch, else_branch: graphs taking the captures
//   loop(M?, cond?, v..., captures...)
//                                  attrs body: (iteration, cond, v..., captures...) ->
//                                  (cond, v..., scan outputs...); num_carried = count of v
//   scan(states..., scan inputs..., captures...)
//                                  attrs body: (states..., slices..., captures...) ->
//                                  (states..., scan output slices...); num_carried,
//                                  num_scan_inputs, scan_input_axes/directions,
//                                  scan_output_axes/directions
// Outer values a subgraph reads are explicit inputs of the node (captures), so liveness, dead
// code and memory planning see them like any other use. Output shapes are inferred through the
// subgraphs when the node's input shapes make theirs static; otherwise they wait for run time.
#include <optional>

#include "graph/op_schema.h"
#include "lumen/container.h"
#include "lumen/graph.h"

namespace lumen {
namespace {

constexpr int kMaxControlFlowInputs = 1 << 16;

const Graph &subgraph(const InferContext &ctx, const char *name) {
  const Graph *g = ctx.attrs.get_graph(name);
  if (!g) ctx.fail("attribute '", name, "' (a graph) is required");
  return *g;
}

// A subgraph output: its dtype, and its shape when static.
struct OutputType {
  DType dtype;
  std::optional<Shape> shape;
  std::vector<DType> element;  // containers' item type
  bool operator==(const OutputType &) const = default;
};

// The subgraph's output types when `inputs` (one per subgraph input, nullptr: as declared)
// are given: the subgraph is specialized on a copy where the given types are more specific.
std::vector<OutputType> subgraph_outputs(const InferContext &ctx, const Graph &g,
                                         const std::vector<const TensorType *> &inputs) {
  if (inputs.size() != g.inputs().size())
    ctx.fail("a subgraph takes ", g.inputs().size(), " inputs, the node gives ", inputs.size());
  auto narrows = [&](size_t i, const Value *in) {
    return ctx.shapes_known && inputs[i] && inputs[i]->shape.is_static() &&
           (!in->has_shape() || !in->shape().is_static());
  };
  bool narrower = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value *in = g.inputs()[i];
    if (inputs[i] && (inputs[i]->dtype != in->dtype() || inputs[i]->element != in->element_type()))
      ctx.fail("subgraph input '", in->name(), "' is ", type_name(in->dtype(), in->element_type()),
               ", given ", type_name(inputs[i]->dtype, inputs[i]->element));
    narrower = narrower || narrows(i, in);
  }
  auto types_of = [](const Graph &graph) {
    std::vector<OutputType> out;
    for (const Value *v : graph.outputs())
      out.push_back({v->dtype(),
                     v->has_shape() && v->shape().is_static() ? std::optional<Shape>(v->shape())
                                                              : std::nullopt,
                     v->element_type()});
    return out;
  };
  if (!narrower) return types_of(g);
  Graph copy = g.clone();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (narrows(i, copy.inputs()[i])) copy.set_input_shape(copy.inputs()[i], inputs[i]->shape);
  return types_of(copy);
}

// What inference knows of outputs whose shapes wait for run time.
std::vector<TensorType> dtypes_of(const std::vector<OutputType> &types) {
  std::vector<TensorType> out;
  for (const OutputType &t : types) out.push_back({t.dtype, Shape{}, t.element});
  return out;
}

std::vector<const TensorType *> node_inputs(const InferContext &ctx, size_t first) {
  return {ctx.inputs.begin() + static_cast<std::ptrdiff_t>(first), ctx.inputs.end()};
}

std::vector<TensorType> infer_if(const InferContext &ctx) {
  const TensorType &cond = ctx.input(0);
  if (cond.dtype != DType::Bool) ctx.fail("cond must be bool, got ", dtype_name(cond.dtype));
  const auto captures = node_inputs(ctx, 1);
  const auto then_types = subgraph_outputs(ctx, subgraph(ctx, "then_branch"), captures);
  const auto else_types = subgraph_outputs(ctx, subgraph(ctx, "else_branch"), captures);
  if (then_types.size() != else_types.size())
    ctx.fail("then_branch has ", then_types.size(), " outputs, else_branch ", else_types.size());
  std::vector<TensorType> out;
  for (size_t i = 0; i < then_types.size(); ++i) {
    const OutputType &t = then_types[i], &e = else_types[i];
    if (t.dtype != e.dtype || t.element != e.element)
      ctx.fail("output ", i, " is ", type_name(t.dtype, t.element), " in then_branch but ",
               type_name(e.dtype, e.element), " in else_branch");
    if (!t.shape || t != e) ctx.defer(dtypes_of(then_types));
    out.push_back({t.dtype, *t.shape, t.element});
  }
  return out;
}

// Scalar iteration count and condition first, then carried values and captures.
std::vector<TensorType> infer_loop(const InferContext &ctx) {
  const Graph &body = subgraph(ctx, "body");
  const auto n = static_cast<size_t>(ctx.attrs.get_int("num_carried", 0));
  if (ctx.num_inputs() < 2 + n) ctx.fail("needs ", 2 + n, " inputs, got ", ctx.num_inputs());
  if (ctx.has_input(0) && ctx.input(0).dtype != DType::Int64)
    ctx.fail("M must be int64, got ", dtype_name(ctx.input(0).dtype));
  if (ctx.has_input(1) && ctx.input(1).dtype != DType::Bool)
    ctx.fail("cond must be bool, got ", dtype_name(ctx.input(1).dtype));
  const TensorType iteration{DType::Int64, Shape{}}, condition{DType::Bool, Shape{}};
  std::vector<const TensorType *> inputs{&iteration, &condition};
  for (size_t i = 2; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.inputs[i]);
  const auto body_types = subgraph_outputs(ctx, body, inputs);
  if (body_types.size() < 1 + n)
    ctx.fail("body has ", body_types.size(), " outputs, needs at least ", 1 + n);
  const std::vector<OutputType> results(body_types.begin() + 1, body_types.end());
  // Scan outputs' lengths are the trip count, known at run time.
  if (results.size() > n) ctx.defer(dtypes_of(results));
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(2 + i)) ctx.fail("loop-carried input ", i, " is missing");
    const TensorType &initial = ctx.input(2 + i);
    // An optional may enter and its item leave (an optional input takes its item too): the
    // loop then gives the item's type.
    if (initial.dtype == DType::Optional &&
        item_type(results[i].dtype, results[i].element) == initial.element) {
      if (!results[i].shape) ctx.defer(dtypes_of(results));
      out.push_back({results[i].dtype, *results[i].shape, results[i].element});
      continue;
    }
    if (results[i].dtype != initial.dtype || results[i].element != initial.element)
      ctx.fail("loop-carried value ", i, " enters as ", type_name(initial.dtype, initial.element),
               " and leaves the body as ", type_name(results[i].dtype, results[i].element));
    // Static only when the body keeps the value's shape (it may grow each iteration).
    if (results[i].shape != initial.shape) ctx.defer(dtypes_of(results));
    out.push_back(initial);
  }
  return out;
}

std::vector<TensorType> infer_scan(const InferContext &ctx) {
  const Graph &body = subgraph(ctx, "body");
  const auto n = static_cast<size_t>(ctx.attrs.get_int("num_carried", 0));
  const auto m = static_cast<size_t>(ctx.attrs.get_int("num_scan_inputs", 0));
  if (m < 1) ctx.fail("num_scan_inputs must be at least 1");
  if (ctx.num_inputs() < n + m) ctx.fail("needs ", n + m, " inputs, got ", ctx.num_inputs());
  const auto in_axes = ctx.attrs.get_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  if (in_axes.size() != m) ctx.fail("scan_input_axes must have ", m, " values");
  // Each scan input gives the body one slice: its shape without the scan axis.
  std::vector<TensorType> slices(m);
  std::vector<const TensorType *> inputs;
  for (size_t i = 0; i < n; ++i) inputs.push_back(ctx.inputs[i]);
  int64_t length = kUnknownDim;
  bool static_inputs = true;
  for (size_t j = 0; j < m; ++j) {
    const TensorType &x = ctx.input(n + j);
    static_inputs = static_inputs && x.shape.is_static();
    if (!x.shape.is_static()) {
      inputs.push_back(nullptr);
      continue;
    }
    const size_t axis = x.shape.normalize_axis(in_axes[j], "scan_input_axes");
    std::vector<int64_t> dims = x.shape.dims();
    if (length != kUnknownDim && dims[axis] != length)
      ctx.fail("scan inputs differ in length: ", length, " and ", dims[axis]);
    length = dims[axis];
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
    slices[j] = {x.dtype, Shape(dims)};
    inputs.push_back(&slices[j]);
  }
  for (size_t i = n + m; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.inputs[i]);
  const auto body_types = subgraph_outputs(ctx, body, inputs);
  if (body_types.size() < n) ctx.fail("body has ", body_types.size(), " outputs, needs ", n);
  const size_t k = body_types.size() - n;
  const auto out_axes = ctx.attrs.get_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  if (out_axes.size() != k) ctx.fail("scan_output_axes must have ", k, " values");
  if (!static_inputs) ctx.defer(dtypes_of(body_types));
  std::vector<TensorType> out;
  for (size_t i = 0; i < body_types.size(); ++i) {
    const OutputType &t = body_types[i];
    if (i < n && t.dtype != ctx.input(i).dtype)
      ctx.fail("state ", i, " enters as ", dtype_name(ctx.input(i).dtype),
               " and leaves the body as ", dtype_name(t.dtype));
    if (!t.shape || (i < n && *t.shape != ctx.input(i).shape)) ctx.defer(dtypes_of(body_types));
    std::vector<int64_t> dims = t.shape->dims();
    if (i >= n) {  // the slices stacked along the output axis
      const auto rank = static_cast<int64_t>(dims.size()) + 1;
      int64_t axis = out_axes[i - n];
      if (axis < -rank || axis >= rank) ctx.fail("scan_output_axes value ", axis, " out of range");
      dims.insert(dims.begin() + (axis < 0 ? axis + rank : axis), length);
    }
    out.push_back({t.dtype, Shape(dims)});
  }
  return out;
}

LUMEN_REGISTER_OP({.name = "if",
                   .min_inputs = 1,
                   .max_inputs = kMaxControlFlowInputs,
                   .num_outputs = kVariadicOutputs,
                   .infer = infer_if,
                   .takes_containers = true});
LUMEN_REGISTER_OP({.name = "loop",
                   .min_inputs = 0,
                   .max_inputs = kMaxControlFlowInputs,
                   .num_outputs = kVariadicOutputs,
                   .infer = infer_loop,
                   .takes_containers = true});
LUMEN_REGISTER_OP({.name = "scan",
                   .min_inputs = 1,
                   .max_inputs = kMaxControlFlowInputs,
                   .num_outputs = kVariadicOutputs,
                   .infer = infer_scan,
                   .takes_containers = true});

}  // namespace
}  // namespace lumen
