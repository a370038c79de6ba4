// Recognizes SiLU and hard-swish written out as a gate times its input, as exporters write them,
// and replaces each with one node that fuses into a conv's or matmul's epilogue like any other
// activation (fuse_bias_activation), where the written-out form cannot: its input has two users.
//   silu:       x * sigmoid(x)
//   hard_swish: x * hard_sigmoid(x) with alpha 1/6 and beta 1/2 (PyTorch's hardsigmoid)
// The mul's operands in either order; the gate must have no other use; x may have many.
#include <cmath>
#include <optional>
#include <string>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

struct SwishMatch {
  std::string op;  // "silu" or "hard_swish"
  Value *x = nullptr;
  Node *gate = nullptr;
};

// Mul `node` as x times a gate on x that nothing else uses.
std::optional<SwishMatch> match_swish(const Graph &graph, const Node *node) {
  if (node->op() != "mul" || node->inputs().size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Value *gate = node->input(i);
    Value *x = node->input(1 - i);
    Node *g = gate->producer();
    if (!g || g->input(0) != x || !has_single_use(graph, gate)) continue;
    const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-4 * std::abs(b); };
    if (g->op() == "sigmoid") return SwishMatch{"silu", x, g};
    if (g->op() == "hard_sigmoid" && near(g->attrs().get_float("alpha", 0.2), 1.0 / 6) &&
        near(g->attrs().get_float("beta", 0.5), 0.5))
      return SwishMatch{"hard_swish", x, g};
  }
  return std::nullopt;
}

class RecognizeSwish final : public Pass {
 public:
  std::string_view name() const override { return "recognize_swish"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    // A gate is visited before its mul, and removed only with it.
    for (Node *node : graph.topological_order()) {
      const std::optional<SwishMatch> m = match_swish(graph, node);
      if (!m) continue;
      Value *fused = graph.add_op(m->op, {m->x}, {}, graph.fresh_name(node->name()));
      if (!graph.can_replace(node->output(), fused)) {
        graph.remove_node(fused->producer());
        continue;
      }
      graph.replace_all_uses(node->output(), fused);
      ctx.note("recognized ", m->op, " (", node_labels({m->gate, node}), ") -> ", m->op, " '",
               fused->producer()->name(), "'");
      graph.remove_node(node);
      graph.remove_node(m->gate);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_swish() {
  return std::make_unique<RecognizeSwish>();
}

}  // namespace lumen
