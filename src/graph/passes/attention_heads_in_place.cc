// Attention on [batch, seq, heads * head_size] in place. Exporters split the heads of Q, K and V
// (reshape [B, S, H, D], then transpose [0, 2, 1, 3]; K^T's transposes compose to the same) and
// merge the output's (transpose [0, 2, 1, 3], then reshape [B, S, H * D]) around attention: four
// copies of every activation per layer. The attention op reads and writes the rank-3 layout
// itself (ONNX Attention's q_num_heads / kv_num_heads), so a recognized attention whose inputs
// and output are all split and merged that way takes the rank-3 values instead, and the copies
// go (dead code elimination). Runs after recognize_attention.
#include <optional>
#include <unordered_set>
#include <utility>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

const std::vector<int64_t> kHeadSwap{0, 2, 1, 3};

// The rank-3 value [B, S, H * D] that `v` ([B, H, S, D]) splits into heads, and H: v reached from
// it by a reshape to [B, S, H, D] and transposes that compose to [0, 2, 1, 3].
std::optional<std::pair<Value *, int64_t>> split_heads(Value *v) {
  std::vector<int64_t> perm{0, 1, 2, 3};  // v's dim i is dim perm[i] of `at`
  Value *at = v;
  while (Node *t = producer_if(at, "transpose")) {
    const auto p = t->attrs().get_ints("perm", {});
    if (p.size() != 4) return std::nullopt;
    for (int64_t &d : perm) d = p[static_cast<size_t>(d)];
    at = t->input(0);
  }
  Node *reshape = producer_if(at, "reshape");
  if (perm != kHeadSwap || !reshape) return std::nullopt;
  Value *x = reshape->input(0);
  const auto sx = known_shape(x), split = known_shape(at);
  if (!sx || !split || sx->dims.rank() != 3 || split->dims.rank() != 4) return std::nullopt;
  const int64_t heads = split->dims[2], size = split->dims[3];
  if (heads < 1 || size < 1 || sx->dims[2] != heads * size || !same_dim(x, 0, at, 0) ||
      !same_dim(x, 1, at, 1))
    return std::nullopt;
  return std::make_pair(x, heads);
}

// The reshape back to [B, S, H * D] that merges the heads of attention output `y`, when y's only
// use is transpose [0, 2, 1, 3] whose only use is that reshape.
Node *merge_heads(const Graph &graph, Value *y) {
  Node *t = sole_user_if(graph, y, "transpose");
  if (!t || t->attrs().get_ints("perm", {}) != kHeadSwap) return nullptr;
  Node *reshape = sole_user_if(graph, t->output(), "reshape");
  if (!reshape) return nullptr;
  const auto sy = known_shape(y), merged = known_shape(reshape->output());
  if (!sy || !merged || sy->dims.rank() != 4 || merged->dims.rank() != 3) return nullptr;
  const int64_t heads = sy->dims[1], size = sy->dims[3];
  if (heads < 1 || size < 1 || merged->dims[2] != heads * size ||
      !same_dim(reshape->output(), 0, y, 0) || !same_dim(reshape->output(), 1, y, 2))
    return nullptr;
  return reshape;
}

class AttentionHeadsInPlace final : public Pass {
 public:
  std::string_view name() const override { return "attention_heads_in_place"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::unordered_set<const Node *> removed;  // later in the order: not to be visited
    for (Node *node : graph.topological_order()) {
      if (removed.count(node)) continue;
      // Rank-4 attention with only its main output used (present keys and values stay rank 4
      // either way, but the node here is rebuilt with one output).
      if (node->op() != "attention" || node->attrs().has("q_num_heads") ||
          node->inputs().size() < 3 || node->inputs().size() > 4)
        continue;
      bool other_outputs_used = false;
      for (size_t i = 1; i < node->outputs().size(); ++i)
        other_outputs_used |= is_live(graph, node->output(i));
      if (other_outputs_used) continue;
      Node *merge = merge_heads(graph, node->output(0));
      if (!merge) continue;
      const std::string name = node->name();
      const auto q = split_heads(node->input(0)), k = split_heads(node->input(1)),
                 v = split_heads(node->input(2));
      if (!q || !k || !v || k->second != v->second) continue;
      std::vector<Value *> inputs{q->first, k->first, v->first};
      if (node->inputs().size() == 4) inputs.push_back(node->input(3));
      Attributes attrs = node->attrs();
      attrs.set("q_num_heads", q->second);
      attrs.set("kv_num_heads", k->second);
      // A new node's output can stand for any value, graph outputs included (can_replace).
      Node *rank3 = graph.add_node("attention", inputs, attrs, graph.fresh_name(name));
      graph.replace_all_uses(merge->output(), rank3->output(0));
      Node *transpose = merge->input(0)->producer();
      for (Node *n : {merge, transpose, node})  // the heads' split copies go with dead code
        if (remove_if_dead(graph, n)) removed.insert(n);
      ctx.note("attention '", name, "' reads and writes [batch, seq, heads * size] (", q->second,
               " query heads, ", k->second, " key/value heads)");
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_attention_heads_in_place() {
  return std::make_unique<AttentionHeadsInPlace>();
}

}  // namespace lumen
