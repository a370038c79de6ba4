// Attention reads Q, K and V as column ranges of one tensor. A transformer layer projects one
// input three times (x W_q + b_q, x W_k + b_k, x W_v + b_v), and after attention_heads_in_place
// its attention reads the three [B, S, heads * D] results directly. One matmul with the weights
// side by side, [hidden, (Hq + 2 Hkv) * D], reads and packs x once and gives the GEMM three times
// the columns to share among threads; attention reads Q, K and V as column ranges of its output
// (attribute qkv_packed), so nothing is split or copied. The forms exporters write:
//   - three projections, each a matmul or fused_matmul (a bias; without one, as Whisper's K, it
//     gets zeros), maybe times a constant scalar (Whisper scales Q after its projection: the
//     scale goes into that part's weights and bias);
//   - one projection already merged (GPT-2's c_attn) split into Q, K and V along the last dim:
//     attention reads the split's input, and the split copies go.
// Runs after matmul_add_to_gemm, whose fused_matmul carries the biases.
#include <algorithm>
#include <optional>
#include <unordered_set>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// scale * (x @ W (+ bias)), float32, with constant 2-D weights and bias, no activation, read only
// by the attention.
struct Projection {
  Node *node;
  const Tensor *weights;
  const Tensor *bias;  // nullptr: none
  float scale = 1;
  Node *scaling = nullptr;  // the mul by `scale`, if any
};

std::optional<Projection> projection(const Graph &graph, Value *v) {
  if (!has_single_use(graph, v)) return std::nullopt;
  float scale = 1;
  Node *scaling = producer_if(v, "mul");
  if (scaling) {
    Value *product = nullptr;
    for (size_t i = 0; i < 2 && !product; ++i)
      if (auto s = scalar_constant(scaling->input(i)); s && same_shape(scaling->input(1 - i), v))
        product = scaling->input(1 - i), scale = float(*s);
    if (!product || !has_single_use(graph, product)) return std::nullopt;
    v = product;
  }
  Node *n = v->producer();
  if (!n || (n->op() != "matmul" && n->op() != "fused_matmul")) return std::nullopt;
  if (!n->attrs().get_string("activation", "").empty()) return std::nullopt;
  const Value *w = n->input(1);
  if (!w->is_constant() || w->dtype() != DType::Float32 || w->shape().rank() != 2)
    return std::nullopt;
  const Value *bias = n->inputs().size() > 2 ? n->input(2) : nullptr;
  if (bias && (!bias->is_constant() || bias->dtype() != DType::Float32)) return std::nullopt;
  return Projection{n, &w->constant(), bias ? &bias->constant() : nullptr, scale, scaling};
}

// The projections' weights side by side, [K, sum of N], and their biases ([sum of N]; zeros for
// a part without one), each part times its scale.
std::pair<Tensor, Tensor> merged_constants(const std::vector<Projection> &parts, int64_t k,
                                           int64_t n) {
  Tensor weights = Tensor::empty({k, n}, DType::Float32);
  Tensor bias = Tensor::zeros({n}, DType::Float32);
  float *wm = weights.data<float>(), *bm = bias.data<float>();
  int64_t col = 0;
  for (const Projection &p : parts) {
    const Tensor w = p.weights->contiguous();
    const int64_t width = w.shape()[1];
    const float *wp = w.data<float>();
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < width; ++c) wm[r * n + col + c] = wp[r * width + c] * p.scale;
    if (p.bias) {
      const Tensor b = p.bias->contiguous();
      const float *bp = b.data<float>();
      for (int64_t c = 0; c < width; ++c) bm[col + c] = bp[c] * p.scale;
    }
    col += width;
  }
  return {std::move(weights), std::move(bias)};
}

// Where a `split` node's output lies in its input: the input, and the first of its last-dim
// columns. nullopt unless the split is along the last dim with sizes known at compile time.
std::optional<std::pair<Value *, int64_t>> split_columns(Value *v) {
  Node *split = producer_if(v, "split");
  if (!split) return std::nullopt;
  Value *x = split->input(0);
  const auto known = known_shape(x);
  if (!known) return std::nullopt;
  const Shape &shape = known->dims;
  const auto rank = int64_t(shape.rank());
  int64_t axis = split->attrs().get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (rank < 1 || axis != rank - 1 || shape[axis] == kUnknownDim) return std::nullopt;
  std::vector<int64_t> sizes;
  if (split->inputs().size() > 1 && split->input(1)) {
    auto given = constant_ints(split->input(1));
    if (!given) return std::nullopt;
    sizes = *given;
  } else if (split->attrs().has("split")) {
    sizes = split->attrs().get_ints("split", {});
  } else {
    const int64_t parts = split->attrs().get_int("num_outputs", 0);
    if (parts <= 0) return std::nullopt;
    const int64_t chunk = (shape[axis] + parts - 1) / parts;
    sizes.assign(size_t(parts), chunk);
  }
  const int64_t index = split->attrs().get_int("index", 0);
  if (index < 0 || index >= int64_t(sizes.size())) return std::nullopt;
  int64_t begin = 0;
  for (int64_t i = 0; i < index; ++i) begin += sizes[size_t(i)];
  return std::make_pair(x, begin);
}

class MergeQkvProjections final : public Pass {
 public:
  std::string_view name() const override { return "merge_qkv_projections"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::unordered_set<const Node *> removed;  // later in the order: not to be visited
    for (Node *node : graph.topological_order()) {
      if (removed.count(node) || node->op() != "attention" || !node->attrs().has("q_num_heads") ||
          node->attrs().get_int("qkv_packed", 0) != 0 || node->inputs().size() < 3)
        continue;
      Value *q = node->input(0), *k = node->input(1), *v = node->input(2);
      const auto nq = known_shape(q), nk = known_shape(k), nv = known_shape(v);
      if (q == k || q == v || k == v || !nq || !nk || !nv || nq->dims.rank() != 3) continue;
      const int64_t hq = node->attrs().get_int("q_num_heads", 0);
      const int64_t hkv = node->attrs().get_int("kv_num_heads", 0);
      const int64_t width_q = nq->dims[2], width_k = nk->dims[2];
      // Every head the same size in the packed layout.
      if (hq < 1 || hkv < 1 || width_q == kUnknownDim || width_q % hq != 0 ||
          width_k != width_q / hq * hkv || nv->dims[2] != width_k)
        continue;
      const int64_t width = width_q + 2 * width_k;
      const std::string name = node->name();
      std::string from;
      std::vector<Node *> replaced;  // removed with the attention where dead
      Value *packed_input = nullptr;
      if (auto columns = packed_columns(q, k, v, width_q, width_k, width)) {
        packed_input = columns;
        from = str("split ", node_labels({q->producer(), k->producer(), v->producer()}));
        replaced = {q->producer(), k->producer(), v->producer()};
      } else {
        std::vector<Projection> parts;
        for (Value *x : {q, k, v})
          if (auto p = projection(graph, x)) parts.push_back(*p);
        if (parts.size() != 3) continue;
        Value *x = parts[0].node->input(0);
        const int64_t depth = parts[0].weights->shape()[0];
        bool same_input = true;
        for (const Projection &p : parts)
          same_input &= p.node->input(0) == x && p.weights->shape()[0] == depth;
        if (!same_input) continue;
        auto [weights, bias] = merged_constants(parts, depth, width);
        std::vector<Value *> operands{
            x, graph.add_constant(graph.fresh_name(name + "_qkv_weights"), std::move(weights))};
        if (std::any_of(parts.begin(), parts.end(), [](const Projection &p) { return p.bias; }))
          operands.push_back(
              graph.add_constant(graph.fresh_name(name + "_qkv_bias"), std::move(bias)));
        Node *merged =
            graph.add_node("fused_matmul", operands, {}, graph.fresh_name(name + "_qkv"));
        packed_input = merged->output();
        for (const Projection &p : parts) {
          if (p.scaling) replaced.push_back(p.scaling);
          replaced.push_back(p.node);
        }
        from = str("projections ", node_labels(replaced), " merged into fused_matmul '",
                   merged->name(), "' [", depth, ", ", width, "]");
      }
      std::vector<Value *> inputs{packed_input, packed_input, packed_input};
      for (size_t i = 3; i < node->inputs().size(); ++i) inputs.push_back(node->input(i));
      Attributes attrs = node->attrs();
      attrs.set("qkv_packed", int64_t{1});
      // A new node's outputs can stand for any value, graph outputs included (can_replace).
      Node *packed = graph.add_node("attention", inputs, attrs, graph.fresh_name(name));
      for (size_t i = 0; i < node->outputs().size(); ++i)
        graph.replace_all_uses(node->output(i), packed->output(i));
      ctx.note("attention '", name, "' reads Q, K and V packed [.., ", width, "]: ", from);
      replaced.insert(replaced.begin(), node);
      for (Node *n : replaced)
        if (remove_if_dead(graph, n)) removed.insert(n);
      changed = true;
    }
    return changed;
  }

 private:
  // The tensor whose last-dim columns [0, wq), [wq, wq + wk), [wq + wk, width) q, k and v are
  // split from, or nullptr.
  static Value *packed_columns(Value *q, Value *k, Value *v, int64_t wq, int64_t wk,
                               int64_t width) {
    const auto cq = split_columns(q), ck = split_columns(k), cv = split_columns(v);
    if (!cq || !ck || !cv || cq->first != ck->first || cq->first != cv->first) return nullptr;
    Value *x = cq->first;
    const auto shape = known_shape(x);
    if (!shape || shape->dims[shape->dims.rank() - 1] != width || x->dtype() != DType::Float32 ||
        cq->second != 0 || ck->second != wq || cv->second != wq + wk)
      return nullptr;
    return x;
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_qkv_projections() {
  return std::make_unique<MergeQkvProjections>();
}

}  // namespace lumen
