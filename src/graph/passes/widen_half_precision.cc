#include "graph/passes/widen_half_precision.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pattern.h"
#include "lumen/ops.h"

namespace lumen {
namespace {

// The one half-precision type among the node's floating values, or nullopt where there is none,
// where another floating type appears beside it, or where an attribute names a dtype (the node
// then decides a type itself, which widening its inputs would not change).
std::optional<DType> narrow_type(const Node &node) {
  for (const char *typed : {"to", "dtype", "output_dtype"})
    if (node.attrs().has(typed)) return std::nullopt;
  if (node.attrs().has_graphs()) return std::nullopt;
  std::optional<DType> narrow;
  bool other_float = false;
  const auto see = [&](const Value *v) {
    if (!v || !is_floating(v->dtype())) return;
    if (!is_half_precision(v->dtype()))
      other_float = true;
    else if (narrow && *narrow != v->dtype())
      other_float = true;
    else
      narrow = v->dtype();
  };
  for (const Value *in : node.inputs()) see(in);
  for (const Value *out : node.outputs()) see(out);
  return other_float ? std::nullopt : narrow;
}

}  // namespace

bool widen_half_precision(Graph &graph, const std::function<bool(const Node &)> &slower_half,
                          const std::function<bool(const Node &)> &float32_as_fast) {
  // Each half-precision value cast once, whoever reads it; a widened node's rounded output is
  // read by the next widened node as the float32 value it was rounded from, so a chain of them
  // runs in float32 throughout (and the passes can fuse it), rounding where it ends.
  std::map<const Value *, Value *> widened;
  std::vector<Value *> roundings;  // the casts back to half precision this pass added
  const auto wide = [&](Value *narrow) {
    auto [it, added] = widened.emplace(narrow, nullptr);
    if (!added) return it->second;
    const Attributes to_float{{"to", std::string(dtype_name(DType::Float32))}};
    if (narrow->is_constant())  // converted now rather than on every run
      it->second = graph.add_constant(graph.fresh_name(narrow->name() + "_float32"),
                                      call_op("cast", {narrow->constant()}, to_float)[0]);
    else
      it->second =
          graph.add_op("cast", {narrow}, to_float, graph.fresh_name(narrow->name() + "_float32"));
    return it->second;
  };
  bool changed = false;
  for (Node *node : graph.topological_order()) {
    const std::optional<DType> narrow = narrow_type(*node);
    if (!narrow) continue;
    const bool float32_input = std::any_of(node->inputs().begin(), node->inputs().end(),
                                           [&](const Value *in) { return widened.count(in) > 0; });
    if (!slower_half(*node) && !(float32_input && float32_as_fast(*node))) continue;
    std::vector<Value *> inputs;
    for (Value *in : node->inputs()) inputs.push_back(in && in->dtype() == *narrow ? wide(in) : in);
    Node *computed = graph.add_node(node->op(), inputs, node->attrs(),
                                    graph.fresh_name(node->name() + "_float32"));
    const Attributes to_narrow{{"to", std::string(dtype_name(*narrow))}};
    for (size_t o = 0; o < node->outputs().size(); ++o) {
      Value *result = computed->output(o);
      if (node->output(o)->dtype() == *narrow) {
        Value *rounded = graph.add_op("cast", {result}, to_narrow, graph.fresh_name(node->name()));
        widened[rounded] = result;
        roundings.push_back(rounded);
        result = rounded;
      }
      graph.replace_all_uses(node->output(o), result);
    }
    graph.remove_node(node);
    changed = true;
  }
  // Roundings that no node reads (the chain went on in float32) are dropped.
  for (Value *rounded : roundings)
    if (!is_live(graph, rounded)) graph.remove_node(rounded->producer());
  if (changed) graph.remove_unused_constants();
  return changed;
}

}  // namespace lumen
