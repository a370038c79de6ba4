// conv2d/fused_conv (no residual, no activation yet) whose output feeds only an add, where the
// add's other operand z has exactly the conv output's shape and dtype (no broadcasting) and does
// not depend on the conv: fused_conv(x, w, b, z). Runs before fuse_bias_activation, so ResNet's
// conv -> batch_norm -> add(shortcut) -> relu ends as one fused_conv with activation=relu.
#include <unordered_set>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// Whether `v` is computed from `node`'s outputs (a fused node reading it would form a cycle).
bool depends_on(const Value *v, const Node *node) {
  std::unordered_set<const Node *> seen;
  std::vector<const Node *> work;
  if (v->producer()) work.push_back(v->producer());
  while (!work.empty()) {
    const Node *n = work.back();
    work.pop_back();
    if (n == node) return true;
    if (!seen.insert(n).second) continue;
    for (const Value *in : n->inputs())
      if (in && in->producer()) work.push_back(in->producer());
  }
  return false;
}

Node *conv_without_epilogue(const Graph &graph, const Value *v) {
  Node *p = v->producer();
  if (!p || (p->op() != "conv2d" && p->op() != "fused_conv")) return nullptr;
  if (!has_single_use(graph, v)) return nullptr;
  if (p->inputs().size() > 3 && p->input(3)) return nullptr;  // already has a residual
  if (!p->attrs().get_string("activation", "").empty()) return nullptr;
  return p;
}

class FuseResidualAdd final : public Pass {
 public:
  std::string_view name() const override { return "fuse_residual_add"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *add : graph.topological_order()) {
      if (add->op() != "add") continue;
      for (size_t i = 0; i < 2; ++i) {
        Node *conv = conv_without_epilogue(graph, add->input(i));
        Value *z = add->input(1 - i);
        if (!conv || z->dtype() != conv->output()->dtype()) continue;
        if (!same_shape(z, conv->output()) || depends_on(z, conv)) continue;
        std::vector<Value *> inputs = conv->inputs();
        inputs.resize(4);
        inputs[3] = z;
        Value *fused =
            graph.add_op("fused_conv", inputs, conv->attrs(), graph.fresh_name(conv->name()));
        if (!replace_pair(graph, ctx, conv, add, fused)) continue;
        changed = true;
        break;
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_residual_add() {
  return std::make_unique<FuseResidualAdd>();
}

}  // namespace lumen
