#include "graph/passes/pattern.h"

#include <cmath>

#include "core/scalar.h"
#include "graph/passes/pass.h"

namespace lumen {
namespace {

// Element i of a numeric tensor as double; nullopt for other dtypes (bool, strings, narrow).
std::optional<double> element(const Tensor &t, int64_t i) {
  std::optional<double> out;
  scalar::visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) out = double(scalar::load<T>(t.data<T>()[i]));
  });
  return out;
}

}  // namespace

bool rewire_uses(Graph &graph, Value *from, Value *to) {
  if (graph.can_replace(from, to)) {
    const bool used = is_live(graph, from);
    graph.replace_all_uses(from, to);
    return used;
  }
  const std::vector<Node *> users = from->users();
  for (Node *user : users)
    for (size_t i = 0; i < user->inputs().size(); ++i)
      if (user->input(i) == from) graph.set_input(user, i, to);
  return !users.empty();
}

bool replace_pair(Graph &graph, PassContext &ctx, Node *producer, Node *follower, Value *fused) {
  if (!graph.can_replace(follower->output(), fused)) {
    graph.remove_node(fused->producer());
    return false;
  }
  ctx.note(producer->op(), " '", producer->name(), "' + ", follower->op(), " '", follower->name(),
           "' -> ", fused->producer()->op(), " '", fused->producer()->name(), "'");
  graph.replace_all_uses(follower->output(), fused);
  graph.remove_node(follower);
  graph.remove_node(producer);
  return true;
}

bool remove_if_dead(Graph &graph, Node *node) {
  for (const Value *out : node->outputs())
    if (is_live(graph, out)) return false;
  graph.remove_node(node);
  return true;
}

std::string node_labels(const std::vector<Node *> &nodes) {
  std::string out;
  for (const Node *n : nodes) out += str(out.empty() ? "" : ", ", n->op(), " '", n->name(), "'");
  return out;
}

std::optional<SymbolicShape> known_shape(const Value *v) {
  if (!v) return std::nullopt;
  if (v->has_shape()) {
    const Shape &shape = v->shape();
    std::vector<std::string> names(shape.rank());
    for (size_t i = 0; i < shape.rank() && i < v->dim_names().size(); ++i)
      if (shape[i] == kUnknownDim) names[i] = v->dim_names()[i];
    return SymbolicShape{shape, std::move(names)};
  }
  return v->symbolic_shape();
}

namespace {

// Dim i of a equals dim j of b for every size of the symbolic dims: equal fixed sizes, or the
// same non-empty name.
bool same_dim_of(const SymbolicShape &a, size_t i, const SymbolicShape &b, size_t j) {
  if (a.dims[i] != b.dims[j]) return false;
  return a.dims[i] != kUnknownDim || (!a.names[i].empty() && a.names[i] == b.names[j]);
}

}  // namespace

bool same_shape(const Value *a, const Value *b) {
  const std::optional<SymbolicShape> sa = known_shape(a), sb = known_shape(b);
  if (!sa || !sb || sa->dims.rank() != sb->dims.rank()) return false;
  for (size_t i = 0; i < sa->dims.rank(); ++i)
    if (!same_dim_of(*sa, i, *sb, i)) return false;
  return true;
}

bool same_dim(const Value *a, int64_t ia, const Value *b, int64_t ib) {
  const std::optional<SymbolicShape> sa = known_shape(a), sb = known_shape(b);
  if (!sa || !sb) return false;
  const auto ra = static_cast<int64_t>(sa->dims.rank()), rb = static_cast<int64_t>(sb->dims.rank());
  if (ia < 0) ia += ra;
  if (ib < 0) ib += rb;
  if (ia < 0 || ia >= ra || ib < 0 || ib >= rb) return false;
  return same_dim_of(*sa, static_cast<size_t>(ia), *sb, static_cast<size_t>(ib));
}

bool is_nondeterministic(std::string_view op) {
  for (std::string_view word : {"random", "bernoulli", "multinomial", "dropout"})
    if (op.find(word) != std::string_view::npos) return true;
  return false;
}

std::optional<double> scalar_constant(const Value *v) {
  if (!v || !v->is_constant() || v->constant().numel() != 1) return std::nullopt;
  return element(v->constant(), 0);
}

bool scalar_near(const Value *v, double expected, double relative_tolerance) {
  const auto c = scalar_constant(v);
  return c && std::abs(*c - expected) <= relative_tolerance * std::abs(expected);
}

std::optional<std::vector<int64_t>> constant_ints(const Value *v) {
  if (!v || !v->is_constant()) return std::nullopt;
  const Tensor &t = v->constant();
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::Int64)
      out.push_back(t.data<int64_t>()[i]);
    else if (t.dtype() == DType::Int32)
      out.push_back(t.data<int32_t>()[i]);
    else
      return std::nullopt;
  }
  return out;
}

bool constant_all_equal(const Value *v, double expected) {
  if (!v || !v->is_constant()) return false;
  const Tensor &t = v->constant();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const auto e = element(t, i);
    if (!e || *e != expected) return false;
  }
  return true;
}

bool is_per_channel_constant(const Value *c, const Value *conv_out) {
  if (!c->is_constant() || c->dtype() != conv_out->dtype() || !conv_out->has_shape()) return false;
  const Shape &s = c->shape(), &y = conv_out->shape();
  if (y.rank() != 4 || y[1] == kUnknownDim) return false;
  const int64_t m = y[1];
  return (s.rank() == 4 && s[0] == 1 && s[1] == m && s[2] == 1 && s[3] == 1) ||
         (s.rank() == 3 && s[0] == m && s[1] == 1 && s[2] == 1);
}

}  // namespace lumen
