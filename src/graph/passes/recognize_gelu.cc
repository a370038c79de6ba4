// Recognizes GELU written out in primitive ops, as PyTorch exports it, and replaces it with one
// gelu node:
//   exact: x * 0.5 * (1 + erf(x / sqrt(2)))   (x / 1.4142135 or x * 0.70710678)
//   tanh:  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (x^3: pow(x, 3) or x*x*x)
// The final product of x, 0.5 and (1 + ...) may be grouped as (x * a) * 0.5, (x * 0.5) * a or
// (a * 0.5) * x, and every multiplication and addition in either operand order. Constants match
// with a relative tolerance of 1e-4. Every intermediate must have no other use; x may have many.
// Where shapes are unknown (dynamic models) the constants must be of rank 0.
#include <cmath>
#include <numbers>
#include <optional>
#include <unordered_set>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// `node` is a mul of `x` and a constant near `c`, in either order.
bool is_mul_by(const Node *node, const Value *x, double c) {
  return node && node->op() == "mul" && scalar_near(other_input(node, x), c);
}

struct GeluMatch {
  Value *x = nullptr;
  Value *y = nullptr;         // the value the gelu node replaces
  std::vector<Node *> nodes;  // matched nodes, producers before users
};

// From a = 1 + (...): the product of x, 0.5 and a in any grouping. Appends the nodes to `m`.
bool match_half_x_product(const Graph &graph, Value *a, GeluMatch &m) {
  Node *m1 = sole_user_if(graph, a, "mul");
  Value *o1 = other_input(m1, a);
  if (!o1) return false;
  if (o1 == m.x || scalar_near(o1, 0.5)) {  // (x * a) * 0.5 or (a * 0.5) * x
    Node *m2 = sole_user_if(graph, m1->output(), "mul");
    Value *o2 = other_input(m2, m1->output());
    if (!o2 || !(o1 == m.x ? scalar_near(o2, 0.5) : o2 == m.x)) return false;
    m.nodes.insert(m.nodes.end(), {m1, m2});
    m.y = m2->output();
    return true;
  }
  Node *half = sole_producer_if(graph, o1, "mul");  // (x * 0.5) * a
  if (!is_mul_by(half, m.x, 0.5)) return false;
  m.nodes.insert(m.nodes.end(), {half, m1});
  m.y = m1->output();
  return true;
}

// e (the erf or tanh output) -> 1 + e -> the 0.5 * x product.
bool match_tail(const Graph &graph, const Node *anchor, GeluMatch &m) {
  Node *add = sole_user_if(graph, anchor->output(), "add");
  if (!add || !scalar_near(other_input(add, anchor->output()), 1.0)) return false;
  m.nodes.push_back(add);
  if (!match_half_x_product(graph, add->output(), m)) return false;
  // The rewrite must not change the result's type (e.g. a [1]-shaped constant broadcasting a
  // scalar x): the shapes are equal, or unknown (a dynamic model) with every constant in the
  // pattern of rank 0, which broadcasts to any shape unchanged.
  if (m.y->dtype() != m.x->dtype()) return false;
  if (same_shape(m.y, m.x)) return true;
  for (const Node *node : m.nodes)
    for (const Value *in : node->inputs())
      if (in && in->is_constant() && in->constant().rank() != 0) return false;
  return true;
}

std::optional<GeluMatch> match_erf_form(const Graph &graph, Node *erf) {
  GeluMatch m;
  const Value *scaled = erf->input(0);
  if (Node *div = sole_producer_if(graph, scaled, "div")) {
    if (!scalar_near(div->input(1), std::numbers::sqrt2)) return std::nullopt;
    m.x = div->input(0);
    m.nodes.push_back(div);
  } else if (Node *mul = sole_producer_if(graph, scaled, "mul")) {
    for (Value *in : mul->inputs())
      if (scalar_near(other_input(mul, in), 1.0 / std::numbers::sqrt2)) m.x = in;
    if (!m.x) return std::nullopt;
    m.nodes.push_back(mul);
  } else {
    return std::nullopt;
  }
  m.nodes.push_back(erf);
  if (!match_tail(graph, erf, m)) return std::nullopt;
  return m;
}

// x^3 as pow(x, 3), (x * x) * x or x * (x * x).
bool match_cube(const Graph &graph, const Value *cube, const Value *x, GeluMatch &m) {
  if (Node *pow = sole_producer_if(graph, cube, "pow")) {
    if (pow->input(0) != x || !scalar_near(pow->input(1), 3.0)) return false;
    m.nodes.push_back(pow);
    return true;
  }
  Node *outer = sole_producer_if(graph, cube, "mul");
  const Value *square = other_input(outer, x);
  Node *inner = sole_producer_if(graph, square, "mul");
  if (!inner || inner->input(0) != x || inner->input(1) != x) return false;
  m.nodes.insert(m.nodes.end(), {inner, outer});
  return true;
}

std::optional<GeluMatch> match_tanh_form(const Graph &graph, Node *tanh) {
  const Value *scaled = tanh->input(0);
  Node *scale = sole_producer_if(graph, scaled, "mul");
  if (!scale) return std::nullopt;
  const Value *inner = nullptr;
  for (const Value *in : scale->inputs())
    if (scalar_near(other_input(scale, in), std::sqrt(2.0 / std::numbers::pi))) inner = in;
  Node *sum = sole_producer_if(graph, inner, "add");
  if (!sum || sum->input(0) == sum->input(1)) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {  // x + 0.044715 * x^3, in either order
    GeluMatch m;
    m.x = sum->input(i);
    Node *cubic = sole_producer_if(graph, sum->input(1 - i), "mul");
    if (!cubic) continue;
    const Value *cube = nullptr;
    for (const Value *in : cubic->inputs())
      if (scalar_near(other_input(cubic, in), 0.044715)) cube = in;
    if (!cube || !match_cube(graph, cube, m.x, m)) continue;
    m.nodes.insert(m.nodes.end(), {cubic, sum, scale, tanh});
    if (match_tail(graph, tanh, m)) return m;
  }
  return std::nullopt;
}

class RecognizeGelu final : public Pass {
 public:
  std::string_view name() const override { return "recognize_gelu"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::unordered_set<const Node *> removed;
    // Each match is applied before the next is sought: a rewrite can replace the x of a later one.
    for (Node *node : graph.topological_order()) {
      if (removed.count(node)) continue;
      std::optional<GeluMatch> m;
      if (node->op() == "erf") m = match_erf_form(graph, node);
      if (node->op() == "tanh") m = match_tanh_form(graph, node);
      if (!m) continue;
      const bool exact = node->op() == "erf";
      Node *last = m->y->producer();
      // Skip patterns already left dead by another pass: replacing them gains nothing.
      if (m->y->users().empty() && !is_graph_output(graph, m->y)) continue;
      Value *gelu =
          graph.add_op("gelu", {m->x}, {{"approximate", std::string(exact ? "none" : "tanh")}},
                       graph.fresh_name(last->name()));
      if (!graph.can_replace(m->y, gelu)) {
        graph.remove_node(gelu->producer());
        continue;
      }
      graph.replace_all_uses(m->y, gelu);
      ctx.note("recognized ", exact ? "erf" : "tanh", " gelu (", node_labels(m->nodes),
               ") -> gelu '", gelu->producer()->name(), "'");
      // The matched nodes are dead now; removing them here keeps a second run from matching them.
      for (auto it = m->nodes.rbegin(); it != m->nodes.rend(); ++it) {
        removed.insert(*it);
        graph.remove_node(*it);
      }
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_gelu() {
  return std::make_unique<RecognizeGelu>();
}

}  // namespace lumen
