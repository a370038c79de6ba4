// Collapses back-to-back layout changes:
//   transpose(transpose(x, p1), p2) -> transpose(x, p1[p2[i]]), or x when that is the identity
//   reshape(reshape(x), s)          -> reshape(x, s)
//   reshape(transpose(reshape(x [a, b, ...] -> [a * b, ...]), p with p[0] = 0) -> [a, b, ...])
//                                   -> transpose(x, [0, 1, 1 + p[1], ...]): a transpose of the
//     trailing dims done on merged leading dims (torch's dynamo exporter writes K^T this way, on
//     [batch * heads, seq, size]), so that it meets the transposes around it.
// The merged form runs only when the inner result has no other use (else the inner node stays and
// nothing is saved); a cancelling pair goes straight to x in any case.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// Removes `node` and then its `inner` producer when rewiring left them unused.
void remove_dead_pair(Graph &graph, Node *node, Node *inner) {
  if (is_live(graph, node->output())) return;
  graph.remove_node(node);
  if (!is_live(graph, inner->output())) graph.remove_node(inner);
}

// A transpose's perm; absent means reversed dims, which needs the input's rank.
std::optional<std::vector<int64_t>> perm_of(const Node *transpose) {
  if (transpose->attrs().has("perm")) return transpose->attrs().get_ints("perm", {});
  const Value *x = transpose->input(0);
  if (!x->has_shape()) return std::nullopt;
  const size_t rank = x->shape().rank();
  std::vector<int64_t> reversed(rank);
  for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
  return reversed;
}

// ONNX semantics: out.shape[i] = in.shape[perm[i]]. Applying p1 then p2 reads
// in.shape[p1[p2[i]]] at output dim i.
std::vector<int64_t> compose(const std::vector<int64_t> &p1, const std::vector<int64_t> &p2) {
  std::vector<int64_t> out(p2.size());
  for (size_t i = 0; i < p2.size(); ++i) out[i] = p1[static_cast<size_t>(p2[i])];
  return out;
}

bool is_identity(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::string ints_to_string(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool fold_transpose_pair(Graph &graph, Node *outer, PassContext &ctx) {
  Node *inner = producer_if(outer->input(0), "transpose");
  if (!inner) return false;
  const auto p1 = perm_of(inner), p2 = perm_of(outer);
  if (!p1 || !p2 || p1->size() != p2->size()) return false;
  for (int64_t p : *p2)
    if (p < 0 || p >= static_cast<int64_t>(p1->size())) return false;
  const std::vector<int64_t> perm = compose(*p1, *p2);
  Value *x = inner->input(0);
  if (is_identity(perm)) {
    const std::string x_name = x->name();  // a graph output may swap names with x
    if (!rewire_uses(graph, outer->output(), x)) return false;
    ctx.note("cancelled transposes '", inner->name(), "' and '", outer->name(), "': users read '",
             x_name, "'");
    remove_dead_pair(graph, outer, inner);
    return true;
  }
  if (!has_single_use(graph, outer->input(0))) return false;
  Value *merged = graph.add_op("transpose", {x}, {{"perm", perm}}, graph.fresh_name(outer->name()));
  ctx.note("merged transposes '", inner->name(), "' and '", outer->name(), "' into '",
           merged->producer()->name(), "' perm ", ints_to_string(perm));
  graph.replace_all_uses(outer->output(), merged);
  remove_dead_pair(graph, outer, inner);
  return true;
}

// The outer reshape's target reads the inner result's dims only through 0 entries ("copy this
// dim") without allowzero; any other target applies to x as well, since x has the same elements.
bool target_independent_of_input(const Node *reshape) {
  if (reshape->attrs().get_int("allowzero", 0) != 0) return true;
  std::vector<int64_t> target;
  if (reshape->inputs().size() > 1 && reshape->input(1)) {
    const auto given = constant_ints(reshape->input(1));
    if (!given) return false;
    target = *given;
  } else {
    target = reshape->attrs().get_ints("shape", {});
  }
  return std::find(target.begin(), target.end(), 0) == target.end();
}

bool fold_reshape_pair(Graph &graph, Node *outer, PassContext &ctx) {
  Node *inner = producer_if(outer->input(0), "reshape");
  if (!inner || !has_single_use(graph, outer->input(0)) || !target_independent_of_input(outer))
    return false;
  std::vector<Value *> inputs = outer->inputs();
  inputs[0] = inner->input(0);
  Value *merged = graph.add_op("reshape", inputs, outer->attrs(), graph.fresh_name(outer->name()));
  ctx.note("merged reshapes '", inner->name(), "' and '", outer->name(), "' into '",
           merged->producer()->name(), "'");
  graph.replace_all_uses(outer->output(), merged);
  remove_dead_pair(graph, outer, inner);
  return true;
}

bool fold_batched_transpose(Graph &graph, Node *outer, PassContext &ctx) {
  Node *transpose = sole_producer_if(graph, outer->input(0), "transpose");
  Node *inner = transpose ? sole_producer_if(graph, transpose->input(0), "reshape") : nullptr;
  if (!inner) return false;
  Value *x = inner->input(0), *merged = inner->output(), *y = outer->output();
  const auto p = perm_of(transpose);
  const auto sx = known_shape(x), sm = known_shape(merged), sy = known_shape(y);
  if (!p || !sx || !sm || !sy) return false;
  const size_t rank = sm->dims.rank();
  if (rank < 2 || p->size() != rank || (*p)[0] != 0 || sx->dims.rank() != rank + 1 ||
      sy->dims.rank() != rank + 1)
    return false;
  // x's trailing dims are the merged value's (so its first is x's first two), and y splits the
  // transposed value's first dim back into x's first two.
  for (size_t i = 1; i < rank; ++i)
    if (!same_dim(merged, int64_t(i), x, int64_t(i + 1)) ||
        !same_dim(y, int64_t(i + 1), transpose->output(), int64_t(i)))
      return false;
  if (!same_dim(y, 0, x, 0) || !same_dim(y, 1, x, 1)) return false;
  std::vector<int64_t> perm{0, 1};
  for (size_t i = 1; i < rank; ++i) perm.push_back((*p)[i] + 1);
  Value *direct = graph.add_op("transpose", {x}, {{"perm", perm}}, graph.fresh_name(outer->name()));
  if (!graph.can_replace(y, direct)) {
    graph.remove_node(direct->producer());
    return false;
  }
  ctx.note("reshape '", inner->name(), "', transpose '", transpose->name(), "' and reshape '",
           outer->name(), "' -> transpose '", direct->producer()->name(), "' perm ",
           ints_to_string(perm));
  graph.replace_all_uses(y, direct);
  graph.remove_node(outer);
  graph.remove_node(transpose);
  graph.remove_node(inner);
  return true;
}

class CancelTransposes final : public Pass {
 public:
  std::string_view name() const override { return "cancel_transposes"; }

  // Topological order: a merged pair is the inner node of the next pair down a chain.
  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *node : graph.topological_order()) {
      if (!is_live(graph, node->output())) continue;
      if (node->op() == "transpose")
        changed = fold_transpose_pair(graph, node, ctx) || changed;
      else if (node->op() == "reshape")
        changed = fold_batched_transpose(graph, node, ctx) || fold_reshape_pair(graph, node, ctx) ||
                  changed;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cancel_transposes() {
  return std::make_unique<CancelTransposes>();
}

}  // namespace lumen
