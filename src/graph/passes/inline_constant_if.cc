// An `if` whose condition is a constant (folded shape checks, export-time flags) is replaced by the
// nodes of the branch it always takes, so that branch joins the graph's fusions and memory plan
// and the other branch is never compiled.
#include <algorithm>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// A graph output keeps its name only by moving onto a new node's output: the branch must compute
// each such output itself (not pass a capture or a constant through), once.
bool outputs_can_move(const Graph &graph, const Node &node, const Graph &sub) {
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    if (!is_graph_output(graph, node.output(i))) continue;
    const Value *result = sub.outputs().at(i);
    if (!result->producer() || std::count(sub.outputs().begin(), sub.outputs().end(), result) != 1)
      return false;
  }
  return true;
}

class InlineConstantIf final : public Pass {
 public:
  std::string_view name() const override { return "inline_constant_if"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *node : graph.topological_order()) {
      if (node->op() != "if" || !node->input(0)->is_constant()) continue;
      const Tensor &cond = node->input(0)->constant();
      if (cond.dtype() != DType::Bool || cond.numel() != 1) continue;  // inference reports it
      const bool taken = cond.contiguous().data<bool>()[0];
      const char *branch = taken ? "then_branch" : "else_branch";
      const Graph *sub = node->attrs().get_graph(branch);
      if (!sub || !outputs_can_move(graph, *node, *sub)) continue;
      const std::vector<Value *> captures(node->inputs().begin() + 1, node->inputs().end());
      const std::vector<Value *> results = graph.inline_graph(*sub, captures, node->name() + "/");
      for (size_t i = 0; i < results.size(); ++i) rewire_uses(graph, node->output(i), results[i]);
      ctx.note("if '", node->name(), "': condition is always ", taken ? "true" : "false",
               ", inlined ", branch);
      remove_if_dead(graph, node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_inline_constant_if() {
  return std::make_unique<InlineConstantIf>();
}

}  // namespace lumen
