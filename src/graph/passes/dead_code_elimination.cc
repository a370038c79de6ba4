// Removes nodes none of whose outputs reach a graph output.
#include <unordered_set>

#include "graph/passes/pass.h"

namespace lumen {
namespace {

class DeadCodeElimination final : public Pass {
 public:
  std::string_view name() const override { return "dead_code_elimination"; }

  bool run(Graph &graph, PassContext &ctx) override {
    std::unordered_set<const Node *> live;
    std::vector<const Value *> work(graph.outputs().begin(), graph.outputs().end());
    while (!work.empty()) {
      const Value *v = work.back();
      work.pop_back();
      if (!v || !v->producer() || !live.insert(v->producer()).second) continue;
      for (const Value *in : v->producer()->inputs()) work.push_back(in);
    }
    bool changed = false;
    // Reverse topological order: users are removed before their producers.
    auto order = graph.topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (live.count(*it)) continue;
      ctx.note("removed ", (*it)->op(), " '", (*it)->name(), "'");
      graph.remove_node(*it);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_elimination() {
  return std::make_unique<DeadCodeElimination>();
}

}  // namespace lumen
