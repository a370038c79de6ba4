// Removes nodes whose output equals one of their inputs: cast to the same dtype, shape ops that
// keep the shape, identity transposes, full slices, zero pads, single-input concats, and adding
// zero / multiplying by one. Their users read the input instead.
//
// ONNX Identity and Dropout never reach the graph: the importer maps them to their input
// (src/onnx/converters/nn.cc).
#include <algorithm>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

bool is_identity_perm(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Steps absent, or a constant of positive steps: with them, a slice that keeps every dim's size
// keeps every element in order (a negative step would reverse).
bool forward_steps(const Node *slice) {
  if (slice->inputs().size() < 5 || !slice->input(4)) return true;
  const Value *steps = slice->input(4);
  if (!steps->is_constant()) return false;
  for (int64_t i = 0; i < steps->constant().numel(); ++i) {
    const Tensor &t = steps->constant();
    const int64_t step = t.dtype() == DType::Int64   ? t.data<int64_t>()[i]
                         : t.dtype() == DType::Int32 ? t.data<int32_t>()[i]
                                                     : 0;
    if (step <= 0) return false;
  }
  return true;
}

// For x op c with c a constant of `neutral` values: x when the result is x itself (same shape and
// dtype, so c does not broadcast x). `constant_may_lead` allows c op x (add, mul; not sub, div).
// For floats, x + 0 turns -0.0 into +0.0; that difference is accepted.
Value *neutral_operand_source(const Node *node, double neutral, bool constant_may_lead) {
  const Value *out = node->output();
  for (size_t c : {size_t{1}, size_t{0}}) {
    if (c == 0 && !constant_may_lead) continue;
    Value *x = node->input(1 - c);
    if (constant_all_equal(node->input(c), neutral) && same_shape(x, out) &&
        x->dtype() == out->dtype())
      return x;
  }
  return nullptr;
}

// The input that `node`'s output equals, or nullptr when the node does something.
Value *no_op_source(const Node *node) {
  const std::string &op = node->op();
  if (node->outputs().size() != 1) return nullptr;
  Value *x = node->inputs().empty() ? nullptr : node->input(0);
  const Value *out = node->output();
  if (!x) return nullptr;
  if (op == "cast") return x->dtype() == out->dtype() ? x : nullptr;
  if (op == "reshape" || op == "flatten" || op == "squeeze" || op == "unsqueeze" || op == "expand")
    return same_shape(x, out) ? x : nullptr;
  if (op == "transpose") {
    if (node->attrs().has("perm"))
      return is_identity_perm(node->attrs().get_ints("perm", {})) ? x : nullptr;
    // The default perm reverses the dims: the identity only up to rank 1.
    return x->has_shape() && x->shape().rank() <= 1 ? x : nullptr;
  }
  if (op == "slice") return same_shape(x, out) && forward_steps(node) ? x : nullptr;
  if (op == "concat") return node->inputs().size() == 1 ? x : nullptr;
  if (op == "pad")
    return node->inputs().size() > 1 && constant_all_equal(node->input(1), 0) ? x : nullptr;
  if (op == "add") return neutral_operand_source(node, 0, true);
  if (op == "sub") return neutral_operand_source(node, 0, false);
  if (op == "mul") return neutral_operand_source(node, 1, true);
  if (op == "div") return neutral_operand_source(node, 1, false);
  return nullptr;
}

class EliminateNoOps final : public Pass {
 public:
  std::string_view name() const override { return "eliminate_no_ops"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *node : graph.topological_order()) {
      Value *source = no_op_source(node);
      if (!source) continue;
      // Taken before rewiring: a graph output swaps names with the value replacing it.
      const std::string source_name = source->name();
      if (!rewire_uses(graph, node->output(), source)) continue;
      ctx.note("removed no-op ", node->op(), " '", node->name(), "': users read '", source_name,
               "'");
      remove_if_dead(graph, node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_no_ops() {
  return std::make_unique<EliminateNoOps>();
}

}  // namespace lumen
