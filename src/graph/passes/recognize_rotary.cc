// Recognizes the rotary embedding torch models write (LLaMA, Mistral, Qwen, GPT-NeoX...):
//
//   add(mul(x, cos), mul(concat(neg(slice(x, D/2, end)), slice(x, 0, D/2)), sin))
//
// (either operand order of each add and mul, the slices along the last axis, any end past D),
// and replaces it with one rotate_half_mix(x, cos, sin) node: seven steps per Q and K per layer
// become one. cos and sin must have x's last dim and broadcast to x over the leading dims without
// growing it. Float32 only (the dtype the CPU kernel covers).
#include <optional>
#include <unordered_set>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// `s` is slice(x, [begin], [end], [last axis], [1]?) of x's last dim, of size d, covering exactly
// [begin, begin + d / 2): returns x.
Value *half_slice(const Value *s, int64_t begin, int64_t d) {
  Node *n = producer_if(s, "slice");
  if (!n || n->inputs().size() < 3) return nullptr;
  Value *x = n->input(0);
  const auto starts = constant_ints(n->input(1)), ends = constant_ints(n->input(2));
  const auto axes = n->inputs().size() > 3 && n->input(3) ? constant_ints(n->input(3))
                                                          : std::optional<std::vector<int64_t>>{};
  const auto steps = n->inputs().size() > 4 && n->input(4) ? constant_ints(n->input(4))
                                                           : std::optional<std::vector<int64_t>>{};
  const auto sx = known_shape(x);
  if (!sx || !starts || !ends || starts->size() != 1 || ends->size() != 1 || sx->dims.rank() < 1 ||
      sx->dims[sx->dims.rank() - 1] != d)
    return nullptr;
  const int64_t rank = static_cast<int64_t>(sx->dims.rank());
  const int64_t axis = axes ? (axes->size() == 1 ? (*axes)[0] : rank) : 0;
  if (axis != -1 && axis != rank - 1) return nullptr;
  if (steps && (steps->size() != 1 || (*steps)[0] != 1)) return nullptr;
  const int64_t end = (*ends)[0] < 0 ? (*ends)[0] + d : std::min((*ends)[0], d);
  const int64_t start = (*starts)[0] < 0 ? (*starts)[0] + d : (*starts)[0];
  return start == begin && end == begin + d / 2 ? x : nullptr;
}

struct RotaryMatch {
  Value *x = nullptr, *cos = nullptr, *sin = nullptr;
  std::vector<Node *> nodes;
};

// mul(x, cos) as `direct` and mul(rotate_half(x), sin) as `rotated`, x's last dim d.
std::optional<RotaryMatch> match_pair(Node *direct, Node *rotated) {
  if (!direct || !rotated || direct->op() != "mul" || rotated->op() != "mul") return std::nullopt;
  for (int ri = 0; ri < 2; ++ri) {
    Node *concat = producer_if(rotated->input(ri), "concat");
    if (!concat || concat->inputs().size() != 2) continue;
    Node *neg = producer_if(concat->input(0), "neg");
    if (!neg) continue;
    const auto sx = known_shape(concat->output());
    if (!sx || sx->dims.rank() < 1) continue;
    const int64_t rank = static_cast<int64_t>(sx->dims.rank());
    const int64_t axis = concat->attrs().get_int("axis", 0);
    const int64_t d = sx->dims[rank - 1];
    if ((axis != -1 && axis != rank - 1) || d == kUnknownDim || d < 2 || d % 2 != 0) continue;
    Value *x = half_slice(neg->input(0), d / 2, d);
    if (!x || half_slice(concat->input(1), 0, d) != x) continue;
    Value *cos = other_input(direct, x);
    if (!cos) continue;
    RotaryMatch m{
        x,
        cos,
        rotated->input(1 - ri),
        {direct, rotated, concat, neg, neg->input(0)->producer(), concat->input(1)->producer()}};
    return m;
  }
  return std::nullopt;
}

// cos broadcasts to x (last dims equal, leading dims 1 or x's) and the sum has x's shape.
bool broadcasts_to(const Value *c, const Value *x) {
  const auto sc = known_shape(c), sx = known_shape(x);
  if (!sc || !sx || sc->dims.rank() < 1 || sc->dims.rank() > sx->dims.rank()) return false;
  const int64_t rc = static_cast<int64_t>(sc->dims.rank()),
                rx = static_cast<int64_t>(sx->dims.rank());
  for (int64_t i = 1; i <= rc; ++i)
    if (!same_dim(c, rc - i, x, rx - i) && (i == 1 || sc->dims[rc - i] != 1)) return false;
  return true;
}

class RecognizeRotary final : public Pass {
 public:
  std::string_view name() const override { return "recognize_rotary"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::unordered_set<const Node *> removed;
    for (Node *add : graph.topological_order()) {
      if (removed.count(add) || add->op() != "add" || add->inputs().size() != 2) continue;
      std::optional<RotaryMatch> m;
      for (int i = 0; i < 2 && !m; ++i)
        m = match_pair(add->input(i)->producer(), add->input(1 - i)->producer());
      if (!m || m->x->dtype() != DType::Float32 || m->cos->dtype() != DType::Float32 ||
          m->sin->dtype() != DType::Float32 || !broadcasts_to(m->cos, m->x) ||
          !broadcasts_to(m->sin, m->x) || !same_shape(m->cos, m->sin) ||
          !same_shape(add->output(), m->x))
        continue;
      Value *y = graph.add_op("rotate_half_mix", {m->x, m->cos, m->sin}, {},
                              graph.fresh_name(add->name()));
      if (!graph.can_replace(add->output(), y)) {
        graph.remove_node(y->producer());
        continue;
      }
      graph.replace_all_uses(add->output(), y);
      ctx.note("recognized a rotary embedding (add '", add->name(), "', ", node_labels(m->nodes),
               ") -> rotate_half_mix '", y->producer()->name(), "'");
      if (remove_if_dead(graph, add)) removed.insert(add);
      for (Node *n : m->nodes)
        if (n && remove_if_dead(graph, n)) removed.insert(n);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_rotary() {
  return std::make_unique<RecognizeRotary>();
}

}  // namespace lumen
