// Recognizes layer normalization written out in primitive ops and replaces it with one layer_norm
// node:
//   mean = reduce_mean(x, axes, keepdims=1)        axes: the last k dims (attribute or input)
//   d    = x - mean
//   var  = reduce_mean(d * d  or  pow(d, 2), the same axes, keepdims=1)
//   std  = sqrt(var + eps)                          eps: a one-element constant, either order
//   y    = d / std  or  d * reciprocal(std)  or  d * (1 / std)
//   optionally y * gamma, then optionally + beta    (either order; each must keep x's shape)
// -> layer_norm(x, gamma or ones, beta) with axis = rank - k and epsilon = eps. Every intermediate
// must have no use outside the pattern (d is read by the square and the normalization only).
// Reductions over other axes (not a suffix of the dims) are left alone.
//
// RMS normalization the same way, without the mean (float32): std = sqrt(reduce_mean(x * x or
// pow(x, 2)) + eps), y = x / std (or times its reciprocal), optionally y * gamma ->
// rms_norm(x, gamma or ones). Here x may have other users (the residual stream of LLaMA or T5).
#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_set>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// The first normalized dim of a keepdims reduce_mean over a suffix of its input's dims (its last
// k dims, k >= 1); nullopt for any other reduction.
std::optional<size_t> suffix_reduction_axis(const Node *reduce) {
  const std::optional<SymbolicShape> x = known_shape(reduce->input(0));
  if (!x || reduce->attrs().get_int("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (reduce->inputs().size() > 1 && reduce->input(1)) {
    const auto given = constant_ints(reduce->input(1));
    if (!given) return std::nullopt;
    axes = *given;
  } else {
    axes = reduce->attrs().get_ints("axes", {});
  }
  const auto rank = static_cast<int64_t>(x->dims.rank());
  if (axes.empty()) {  // every dim, unless told to reduce nothing
    if (reduce->attrs().get_int("noop_with_empty_axes", 0) != 0 || rank == 0) return std::nullopt;
    return size_t(0);
  }
  for (int64_t &a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - int64_t(axes.size()) + int64_t(i)) return std::nullopt;
  return size_t(axes.front());
}

struct LayerNormMatch {
  Value *x = nullptr;
  Value *scale = nullptr;  // nullptr: ones
  Value *bias = nullptr;
  size_t axis = 0;
  double epsilon = 0;
  Value *y = nullptr;         // the value layer_norm's output replaces
  std::vector<Node *> nodes;  // producers before users
  bool rms = false;           // RMS norm: no mean subtracted, no bias
};

bool same_type(const Value *a, const Value *b) {
  return a->dtype() == b->dtype() && same_shape(a, b);
}

// The optional affine part after the normalization, y * scale (+ bias): each step must keep x's
// shape (the parameter broadcasts into x). RMS norm takes no bias.
std::optional<LayerNormMatch> with_affine_part(const Graph &graph, LayerNormMatch m, DType dt) {
  if (Node *times = sole_user_if(graph, m.y, "mul")) {
    Value *gamma = other_input(times, m.y);
    if (gamma && same_type(times->output(), m.x)) {
      m.scale = gamma;
      m.nodes.push_back(times);
      m.y = times->output();
    }
  }
  if (Node *plus = m.rms ? nullptr : sole_user_if(graph, m.y, "add")) {
    Value *beta = other_input(plus, m.y);
    if (beta && same_type(plus->output(), m.x)) {
      m.bias = beta;
      m.nodes.push_back(plus);
      m.y = plus->output();
    }
  }
  if (!m.scale) {  // layer_norm needs a scale: ones over the normalized dims
    const Shape s = known_shape(m.x)->dims;
    for (size_t i = m.axis; i < s.rank(); ++i)
      if (s[i] == kUnknownDim) return std::nullopt;
    if (dt != DType::Float32 && dt != DType::Float64) return std::nullopt;
  }
  return m;
}

// sqrt(var + eps) after the variance (or mean square) node `var`, eps a one-element constant
// >= 0 (either order): the sqrt node, with m.epsilon set and the add and the sqrt appended to
// m.nodes; nullptr when the pattern differs.
Node *std_dev_after(const Graph &graph, Node *var, LayerNormMatch &m) {
  Node *plus_eps = sole_user_if(graph, var->output(), "add");
  const auto eps_value = scalar_constant(other_input(plus_eps, var->output()));
  if (!eps_value || !(*eps_value >= 0) || !std::isfinite(*eps_value)) return nullptr;
  Node *sqrt = sole_user_if(graph, plus_eps->output(), "sqrt");
  if (!sqrt) return nullptr;
  m.epsilon = *eps_value;
  m.nodes.push_back(plus_eps);
  m.nodes.push_back(sqrt);
  return sqrt;
}

// The match ending at `normalize` (x over the deviation), which must keep x's type, and its
// optional affine part.
std::optional<LayerNormMatch> with_normalized(const Graph &graph, LayerNormMatch m, Node *normalize,
                                              DType dt) {
  m.nodes.push_back(normalize);
  m.y = normalize->output();
  if (!same_type(m.y, m.x)) return std::nullopt;
  return with_affine_part(graph, std::move(m), dt);
}

// sub(x, mean) -> ... Starts at the subtraction because d is the value the pattern pivots on.
std::optional<LayerNormMatch> match_layer_norm(const Graph &graph, Node *sub) {
  LayerNormMatch m;
  m.x = sub->input(0);
  Value *d = sub->output();
  Node *mean = sole_producer_if(graph, sub->input(1), "reduce_mean");
  if (!mean || mean->input(0) != m.x || !same_type(m.x, d)) return std::nullopt;
  const DType dt = m.x->dtype();
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Float16 && dt != DType::BFloat16)
    return std::nullopt;
  const auto axis = suffix_reduction_axis(mean);
  if (!axis) return std::nullopt;
  m.axis = *axis;

  // d feeds the square and the normalization, nothing else.
  if (is_graph_output(graph, d)) return std::nullopt;
  std::vector<Node *> readers;
  for (Node *u : d->users())
    if (std::find(readers.begin(), readers.end(), u) == readers.end()) readers.push_back(u);
  if (readers.size() != 2) return std::nullopt;
  Node *square = nullptr, *normalize = nullptr;
  for (size_t i = 0; i < 2; ++i) {
    Node *u = readers[i];
    const bool is_square = (u->op() == "mul" && u->input(0) == d && u->input(1) == d) ||
                           (u->op() == "pow" && u->input(0) == d && scalar_near(u->input(1), 2.0));
    if (is_square) {
      square = u;
      normalize = readers[1 - i];
    }
  }
  const size_t expected_uses = square && square->op() == "mul" ? 3 : 2;
  if (!square || d->users().size() != expected_uses) return std::nullopt;

  Node *var = sole_user_if(graph, square->output(), "reduce_mean");
  if (!var || suffix_reduction_axis(var) != axis) return std::nullopt;
  m.nodes = {mean, sub, square, var};
  Node *sqrt = std_dev_after(graph, var, m);
  if (!sqrt) return std::nullopt;
  Value *std_dev = sqrt->output();

  // y = d / std, d * reciprocal(std) or d * (1 / std).
  if (normalize->op() == "div") {
    if (normalize->input(0) != d || normalize->input(1) != std_dev ||
        !has_single_use(graph, std_dev))
      return std::nullopt;
  } else if (normalize->op() == "mul") {
    Value *inverse = other_input(normalize, d);
    Node *inv = sole_producer_if(graph, inverse, "reciprocal");
    if (!inv) {
      inv = sole_producer_if(graph, inverse, "div");
      if (inv && !scalar_near(inv->input(0), 1.0)) inv = nullptr;
    }
    if (!inv || inv->inputs().back() != std_dev || !has_single_use(graph, std_dev))
      return std::nullopt;
    m.nodes.push_back(inv);
  } else {
    return std::nullopt;
  }
  return with_normalized(graph, std::move(m), normalize, dt);
}

// square(x) -> reduce_mean -> + eps -> sqrt, then x / std, x * reciprocal(std) or x * (1 / std):
// RMS norm (LLaMA's, T5's). x may have other users (the residual stream). Float32 only.
std::optional<LayerNormMatch> match_rms_norm(const Graph &graph, Node *square) {
  LayerNormMatch m;
  m.rms = true;
  m.x = square->input(0);
  const bool is_square =
      (square->op() == "mul" && square->input(1) == m.x) ||
      (square->op() == "pow" && square->inputs().size() == 2 && scalar_near(square->input(1), 2.0));
  if (!is_square || m.x->dtype() != DType::Float32) return std::nullopt;
  Node *var = sole_user_if(graph, square->output(), "reduce_mean");
  const auto axis = var ? suffix_reduction_axis(var) : std::nullopt;
  if (!axis) return std::nullopt;
  m.axis = *axis;
  m.nodes = {square, var};
  Node *sqrt = std_dev_after(graph, var, m);
  if (!sqrt || !has_single_use(graph, sqrt->output())) return std::nullopt;
  Value *std_dev = sqrt->output();
  Node *normalize = std_dev->users().front();
  if (normalize->op() == "div" && normalize->input(0) == m.x && normalize->input(1) == std_dev) {
    // x / std
  } else if (normalize->op() == "reciprocal" ||
             (normalize->op() == "div" && scalar_near(normalize->input(0), 1.0) &&
              normalize->input(1) == std_dev)) {
    Node *inv = normalize;
    normalize = sole_user_if(graph, inv->output(), "mul");
    if (!normalize || other_input(normalize, inv->output()) != m.x) return std::nullopt;
    m.nodes.push_back(inv);
  } else {
    return std::nullopt;
  }
  return with_normalized(graph, std::move(m), normalize, DType::Float32);
}

Tensor ones(const Shape &shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::Float32)
      t.data<float>()[i] = 1.0f;
    else
      t.data<double>()[i] = 1.0;
  }
  return t;
}

class RecognizeLayerNorm final : public Pass {
 public:
  std::string_view name() const override { return "recognize_layer_norm"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::unordered_set<const Node *> removed;
    // Each match is applied before the next is sought: a rewrite can replace the x of a later one.
    for (Node *node : graph.topological_order()) {
      if (removed.count(node)) continue;
      std::optional<LayerNormMatch> m = node->op() == "sub" ? match_layer_norm(graph, node)
                                        : node->op() == "pow" || node->op() == "mul"
                                            ? match_rms_norm(graph, node)
                                            : std::nullopt;
      if (!m) continue;
      // Skip patterns already left dead by another pass: replacing them gains nothing.
      if (m->y->users().empty() && !is_graph_output(graph, m->y)) continue;
      const std::string name = graph.fresh_name(m->y->producer()->name());
      Value *scale = m->scale;
      if (!scale) {
        const Shape s = known_shape(m->x)->dims;
        std::vector<int64_t> dims(s.dims().begin() + std::ptrdiff_t(m->axis), s.dims().end());
        scale = graph.add_constant(graph.fresh_name(name + "_scale"),
                                   ones(Shape(std::move(dims)), m->x->dtype()));
      }
      std::vector<Value *> inputs = {m->x, scale};
      if (m->bias) inputs.push_back(m->bias);
      Node *ln = graph.add_node(m->rms ? "rms_norm" : "layer_norm", inputs,
                                {{"axis", int64_t(m->axis)}, {"epsilon", m->epsilon}}, name);
      graph.replace_all_uses(m->y, ln->output(0));
      ctx.note("recognized ", m->rms ? "RMS" : "layer", " norm over axis ", m->axis, " (",
               node_labels(m->nodes), ") -> ", ln->op(), " '", ln->name(), "'");
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

std::unique_ptr<Pass> make_recognize_layer_norm() {
  return std::make_unique<RecognizeLayerNorm>();
}

}  // namespace lumen
