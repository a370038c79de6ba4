#include "compile/lower.h"

#include <algorithm>
#include <vector>

#include "compile/place.h"
#include "graph/passes/widen_half_precision.h"
#include "runtime/executable_impl.h"

namespace lumen {
namespace {

// Compares where automatic placement puts `node`'s float16/bfloat16 kernel and its float32 one
// (placement dispatches on input 0's dtype): whether float32 lands on a faster backend
// (`strictly`), or on one at least as fast.
bool float32_placed_better(const Node &node, bool strictly) {
  const Value *first = node.inputs().empty() ? nullptr : node.inputs()[0];
  if (!first || !is_half_precision(first->dtype()) || find_builtin_step(node.op())) return false;
  const Backend *half = automatic_backend(node.op(), first->dtype());
  const Backend *full = automatic_backend(node.op(), DType::Float32);
  if (!full) return false;
  if (!half) return true;
  return strictly ? full->priority() > half->priority() : full->priority() >= half->priority();
}
bool slower_in_half_precision(const Node &node) {
  return float32_placed_better(node, true);
}
bool as_fast_in_float32(const Node &node) {
  return float32_placed_better(node, false);
}

}  // namespace

std::optional<Graph> lower(const Graph &graph, std::string_view pinned, int opt_level) {
  const std::vector<Node *> nodes = graph.nodes();
  if (!pinned.empty() || std::none_of(nodes.begin(), nodes.end(),
                                      [](const Node *n) { return slower_in_half_precision(*n); }))
    return std::nullopt;
  Graph widened = graph.clone();
  widen_half_precision(widened, slower_in_half_precision, as_fast_in_float32);
  widened.optimize(opt_level, OptimizeOptions{.dump_from_env = false});
  return widened;
}

}  // namespace lumen
