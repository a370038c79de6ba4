// Recognizes scaled dot-product attention over heads laid out [batch, heads, seq, head_size], in
// the forms exporters write it, and replaces it with one `attention` node (ONNX Attention
// semantics; the CPU kernel never materializes the score matrix):
//
//   matmul(softmax(add(scale * matmul(Q', K'), mask)), V)
//
// where Q' is Q times scalar constants, K' is K^T (any transpose swapping the last two dims, or
// any other [.., head_size, kv_seq] value, which gets a transpose) times scalar constants, the
// scale is any product and quotient of scalar constants on the scores, the mask (optional) is a
// float additive mask whose last dim is the keys' own, and the softmax runs over the last axis.
// torch's guard for rows whose every key is masked, where(is_nan(p), 0, p), is part of the
// pattern (attention gives zeros there too). Grouped-query attention's repeat_kv (unsqueeze ->
// expand -> reshape of K and V to the query heads) is dropped: the kernel reads the shared head.
// Float32 only (the dtype the CPU kernel covers).
#include <optional>
#include <unordered_set>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

struct AttentionMatch {
  Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  Value *k_transposed = nullptr;  // K^T when K is not at hand: the rewrite transposes it
  double scale = 1.0;
  Value *y = nullptr;  // what the attention output replaces
  std::vector<Node *> nodes;
};

std::optional<size_t> rank_of(const Value *v) {
  const auto shape = known_shape(v);
  return shape ? std::optional<size_t>(shape->dims.rank()) : std::nullopt;
}

// Strips `mul(x, c)` / `div(x, c)` by one-element constants (single use each) off `v`, folding
// them into `scale`.
Value *strip_scalars(const Graph &graph, Value *v, double &scale, std::vector<Node *> &nodes) {
  for (;;) {
    Node *p = v->producer();
    if (!p || !has_single_use(graph, v) || p->inputs().size() != 2) return v;
    if (p->op() == "mul") {
      const size_t c = scalar_constant(p->input(1)) ? 1 : scalar_constant(p->input(0)) ? 0 : 2;
      if (c == 2 || p->input(1 - c)->dtype() != v->dtype()) return v;
      scale *= *scalar_constant(p->input(c));
      v = p->input(1 - c);
    } else if (p->op() == "div" && scalar_constant(p->input(1))) {
      const double c = *scalar_constant(p->input(1));
      if (c == 0) return v;
      scale /= c;
      v = p->input(0);
    } else {
      return v;
    }
    nodes.push_back(p);
  }
}

bool swaps_last_two(const Node *transpose) {
  if (!transpose->attrs().has("perm")) return false;
  const std::vector<int64_t> perm = transpose->attrs().get_ints("perm", {});
  return perm == std::vector<int64_t>{0, 1, 3, 2};
}

std::optional<AttentionMatch> match_attention(const Graph &graph, Node *out_matmul) {
  AttentionMatch m;
  m.y = out_matmul->output();
  m.v = out_matmul->input(1);
  Value *p = out_matmul->input(0);
  if (p->dtype() != DType::Float32 || rank_of(p) != 4u || rank_of(m.v) != 4u) return std::nullopt;
  m.nodes.push_back(out_matmul);
  // where(is_nan(softmax), 0, softmax): the guard for rows whose every key is masked.
  if (Node *guard = sole_producer_if(graph, p, "where")) {
    Node *is_nan = producer_if(guard->input(0), "is_nan");
    Value *probs = guard->input(2);
    if (!is_nan || is_nan->input(0) != probs || !constant_all_equal(guard->input(1), 0) ||
        guard->input(0)->users().size() != 1 || probs->users().size() != 2 ||
        is_graph_output(graph, probs))
      return std::nullopt;
    m.nodes.push_back(guard);
    m.nodes.push_back(is_nan);
    p = probs;
  } else if (!has_single_use(graph, p)) {
    return std::nullopt;
  }
  Node *softmax = producer_if(p, "softmax");
  if (!softmax) return std::nullopt;
  const int64_t axis = softmax->attrs().get_int("axis", -1);
  if (axis != -1 && axis != 3) return std::nullopt;
  m.nodes.push_back(softmax);
  Value *logits = softmax->input(0);
  if (!has_single_use(graph, logits)) return std::nullopt;
  Value *scores = logits;
  if (Node *add = producer_if(logits, "add")) {
    // The scores are the operand of the logits' own shape; the mask broadcasts into them along
    // every dim but the keys (ONNX Attention pads a shorter key dim instead of broadcasting it).
    for (size_t i = 0; i < 2 && !m.mask; ++i) {
      Value *s = add->input(i), *mask = add->input(1 - i);
      if (!same_shape(s, logits) || mask->dtype() != DType::Float32 || !same_dim(mask, -1, s, -1))
        continue;
      const auto mask_rank = rank_of(mask);
      if (!mask_rank || *mask_rank > 4) continue;
      m.mask = mask;
      scores = s;
    }
    if (!m.mask) return std::nullopt;
    m.nodes.push_back(add);
    if (!has_single_use(graph, scores)) return std::nullopt;
  }
  scores = strip_scalars(graph, scores, m.scale, m.nodes);
  Node *qk = producer_if(scores, "matmul");
  if (!qk || !has_single_use(graph, scores)) return std::nullopt;
  m.nodes.push_back(qk);
  m.q = strip_scalars(graph, qk->input(0), m.scale, m.nodes);
  Value *kt = strip_scalars(graph, qk->input(1), m.scale, m.nodes);
  if (rank_of(m.q) != 4u || rank_of(kt) != 4u) return std::nullopt;
  Node *transpose = producer_if(kt, "transpose");
  if (transpose && swaps_last_two(transpose) && has_single_use(graph, kt)) {
    m.k = transpose->input(0);
    m.nodes.push_back(transpose);
  } else {
    m.k_transposed = kt;
  }
  // One batch and one head count (matmul would broadcast them; attention does not).
  for (const Value *x : {kt, m.v})
    if (x->dtype() != DType::Float32 || !same_dim(x, 0, m.q, 0) || !same_dim(x, 1, m.q, 1))
      return std::nullopt;
  if (m.q->dtype() != DType::Float32) return std::nullopt;
  return m;
}

// K or V as repeat_kv leaves it: reshape(expand(unsqueeze(x, [2]), [B, Hkv, n, S, D]),
// [B, Hkv * n, S, D]). Returns x and n, or nullopt.
std::optional<std::pair<Value *, int64_t>> repeated_heads(const Graph &graph, Value *v) {
  Node *reshape = producer_if(v, "reshape");
  if (!reshape || !has_single_use(graph, v)) return std::nullopt;
  Node *expand = sole_producer_if(graph, reshape->input(0), "expand");
  if (!expand) return std::nullopt;
  Node *unsqueeze = sole_producer_if(graph, expand->input(0), "unsqueeze");
  if (!unsqueeze) return std::nullopt;
  std::vector<int64_t> axes = unsqueeze->attrs().get_ints("axes", {});
  if (unsqueeze->inputs().size() > 1 && unsqueeze->input(1)) {
    const Value *a = unsqueeze->input(1);
    if (!a->is_constant() || a->constant().numel() != 1) return std::nullopt;
    axes = {static_cast<int64_t>(*scalar_constant(a))};
  }
  if (axes.size() == 1 && axes[0] < 0) axes[0] += 5;  // the expanded rank
  if (axes != std::vector<int64_t>{2}) return std::nullopt;
  Value *x = unsqueeze->input(0);
  const auto sx = known_shape(x), sv = known_shape(v), se = known_shape(expand->output());
  if (!sx || !sv || !se || sx->dims.rank() != 4 || sv->dims.rank() != 4 || se->dims.rank() != 5)
    return std::nullopt;
  const int64_t heads = sx->dims[1], n = se->dims[2];
  if (heads == kUnknownDim || n == kUnknownDim || se->dims[1] != heads || n < 1 ||
      sv->dims[1] != heads * n)
    return std::nullopt;
  // Batch, sequence and head size pass through unchanged.
  for (int64_t d : {0, 2, 3})
    if (!same_dim(x, d, v, d) || !same_dim(x, d, expand->output(), d == 0 ? 0 : d + 1))
      return std::nullopt;
  return std::make_pair(x, n);
}

class RecognizeAttention final : public Pass {
 public:
  std::string_view name() const override { return "recognize_attention"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::unordered_set<const Node *> removed;
    for (Node *node : graph.topological_order()) {
      if (removed.count(node) || node->op() != "matmul" || node->outputs().empty()) continue;
      if (node->output()->users().empty() && !is_graph_output(graph, node->output())) continue;
      std::optional<AttentionMatch> m = match_attention(graph, node);
      if (!m) continue;
      const std::string name = graph.fresh_name(node->name() + "_attention");
      Value *k = m->k ? m->k
                      : graph.add_op("transpose", {m->k_transposed},
                                     {{"perm", std::vector<int64_t>{0, 1, 3, 2}}},
                                     graph.fresh_name(name + "_k"));
      Value *v = m->v;
      // Grouped-query heads: K and V both repeated the same number of times.
      const auto rk = repeated_heads(graph, k), rv = repeated_heads(graph, v);
      if (rk && rv && rk->second == rv->second) {
        k = rk->first;
        v = rv->first;
      }
      std::vector<Value *> inputs{m->q, k, v};
      if (m->mask) inputs.push_back(m->mask);
      Node *attention = graph.add_node("attention", inputs, {{"scale", m->scale}}, name);
      graph.replace_all_uses(m->y, attention->output(0));
      ctx.note("recognized attention (", node_labels(m->nodes), ") -> attention '", name, "'");
      for (Node *n : m->nodes)
        if (remove_if_dead(graph, n)) removed.insert(n);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_attention() {
  return std::make_unique<RecognizeAttention>();
}

}  // namespace lumen
