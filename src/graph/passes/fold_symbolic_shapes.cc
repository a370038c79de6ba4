// Folds the shape arithmetic of a graph with symbolic input dims wherever its result is the same
// for every size the symbols take, as probing the graph at nine sets of sizes shows
// (graph/symbolic_probe.h):
//  - a small tensor computed from shapes (shape -> gather -> unsqueeze -> concat ...) that has one
//    value in every probe becomes a constant (the fixed dims of a symbolic shape);
//  - a reshape to a computed shape gets a constant target: fixed dims as they are, a dim equal to
//    the input's dim at the same position as 0 (copy it), at most one other dim as -1;
//  - an expand to a computed shape that keeps its input's shape is removed, and one that only
//    broadcasts fixed dims gets a constant target (1 where the input's dim stays).
// Exporters write shapes this way in every attention block (view(batch, seq, heads, dim)); without
// the fold a graph whose shapes wait for run time computes them step by step on every run, and
// passes that need constant targets do not match. The shape arithmetic left dead goes in dead-code
// elimination. A graph with no symbolic input dim is left as it is.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"
#include "graph/symbolic_probe.h"

namespace lumen {
namespace {

// Probes that reached every one of `values`; fewer than three cannot tell a fixed size from one
// that follows a symbol, so nothing folds on them.
std::vector<const Probe *> reaching(const std::vector<Probe> &probes,
                                    const std::vector<const Value *> &values) {
  std::vector<const Probe *> out;
  for (const Probe &p : probes)
    if (std::all_of(values.begin(), values.end(), [&](const Value *v) { return p.count(v); }))
      out.push_back(&p);
  if (out.size() < 3) out.clear();
  return out;
}

bool same_tensor(const Tensor &a, const Tensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

// The value `v` has in every probe reaching it, when that is one value.
std::optional<Tensor> fixed_value(const std::vector<Probe> &probes, const Value *v) {
  const std::vector<const Probe *> seen = reaching(probes, {v});
  if (seen.empty()) return std::nullopt;
  const Tensor &first = seen[0]->at(v).value;
  for (const Probe *p : seen)
    if (!p->at(v).value.defined() || !same_tensor(p->at(v).value, first)) return std::nullopt;
  return first;
}

// Dims of `out` per position: the size when fixed across `seen`, nullopt when it varies; empty
// when the rank varies.
std::vector<std::optional<int64_t>> fixed_dims(const std::vector<const Probe *> &seen,
                                               const Value *out) {
  const size_t rank = seen[0]->at(out).shape.rank();
  std::vector<std::optional<int64_t>> dims(rank);
  for (const Probe *p : seen)
    if (p->at(out).shape.rank() != rank) return {};
  for (size_t k = 0; k < rank; ++k) {
    dims[k] = seen[0]->at(out).shape[k];
    for (const Probe *p : seen)
      if (p->at(out).shape[k] != *dims[k]) dims[k].reset();
  }
  return dims;
}

// Whether dim `k` of `a` equals dim `j` of `b` in every probe of `seen`.
bool same_dim(const std::vector<const Probe *> &seen, const Value *a, size_t k, const Value *b,
              size_t j) {
  for (const Probe *p : seen) {
    const Shape &sa = p->at(a).shape, &sb = p->at(b).shape;
    if (k >= sa.rank() || j >= sb.rank() || sa[k] != sb[j]) return false;
  }
  return true;
}

Tensor int64_vector(const std::vector<int64_t> &values) {
  return Tensor::from_vector(Shape({static_cast<int64_t>(values.size())}), values);
}

// A constant target for reshape node `n`, or nullopt.
std::optional<Tensor> reshape_target(const std::vector<Probe> &probes, const Node *n) {
  const Value *x = n->input(0), *out = n->output();
  const std::vector<const Probe *> seen = reaching(probes, {x, out});
  if (seen.empty()) return std::nullopt;
  const std::vector<std::optional<int64_t>> dims = fixed_dims(seen, out);
  const bool allowzero = n->attrs().get_int("allowzero", 0) != 0;
  std::vector<int64_t> target;
  bool inferred = false;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k]) {
      if (*dims[k] == 0) return std::nullopt;  // 0 would mean "copy" (or clash with -1)
      target.push_back(*dims[k]);
    } else if (!allowzero && same_dim(seen, out, k, x, k)) {
      target.push_back(0);
    } else if (!inferred) {
      target.push_back(-1);
      inferred = true;
    } else {
      return std::nullopt;
    }
  }
  if (dims.empty()) return std::nullopt;
  return int64_vector(target);
}

// For expand node `n`: nullopt when no constant target works; an empty tensor when the expand
// keeps its input's shape (nothing to do); else the constant target.
std::optional<Tensor> expand_target(const std::vector<Probe> &probes, const Node *n) {
  const Value *x = n->input(0), *out = n->output();
  const std::vector<const Probe *> seen = reaching(probes, {x, out});
  if (seen.empty()) return std::nullopt;
  const std::vector<std::optional<int64_t>> dims = fixed_dims(seen, out);
  const size_t rank = dims.size(), x_rank = seen[0]->at(x).shape.rank();
  if (rank == 0 || rank < x_rank) return std::nullopt;
  const size_t lead = rank - x_rank;
  bool keeps_shape = rank == x_rank;
  std::vector<int64_t> target;
  for (size_t k = 0; k < rank; ++k) {
    const bool from_x = k >= lead && same_dim(seen, out, k, x, k - lead);
    keeps_shape = keeps_shape && from_x;
    if (dims[k])
      target.push_back(*dims[k]);
    else if (from_x)
      target.push_back(1);
    else
      return std::nullopt;
  }
  if (keeps_shape) return Tensor();
  return int64_vector(target);
}

class FoldSymbolicShapes final : public Pass {
 public:
  std::string_view name() const override { return "fold_symbolic_shapes"; }

  bool run(Graph &graph, PassContext &ctx) override {
    const std::vector<Probe> probes = probe_symbolic_dims(graph);
    if (probes.empty()) return false;
    bool changed = false;
    const std::vector<Node *> order = graph.topological_order();
    for (Node *n : order) {
      for (Value *out : n->outputs()) {
        if (out->users().empty()) continue;  // dead, or a graph output only: nothing to gain
        std::optional<Tensor> value = fixed_value(probes, out);
        if (!value) continue;
        Value *constant = graph.add_constant(graph.fresh_name(out->name() + "_folded"), *value);
        if (rewire_uses(graph, out, constant)) {
          ctx.note("folded ", n->op(), " '", n->name(), "' to a constant ",
                   value->shape().to_string());
          changed = true;
        }
      }
      if (n->op() == "reshape" && n->inputs().size() > 1 && !n->input(1)->is_constant()) {
        if (std::optional<Tensor> target = reshape_target(probes, n)) {
          graph.set_input(n, 1,
                          graph.add_constant(graph.fresh_name(n->name() + "_shape"), *target));
          ctx.note("reshape '", n->name(), "' to a constant target");
          changed = true;
        }
      }
      if (n->op() == "expand" && !n->input(1)->is_constant()) {
        if (std::optional<Tensor> target = expand_target(probes, n)) {
          if (!target->defined()) {
            if (rewire_uses(graph, n->output(), n->input(0))) {
              ctx.note("removed expand '", n->name(), "' (keeps its input's shape)");
              changed = true;
            }
          } else {
            graph.set_input(n, 1,
                            graph.add_constant(graph.fresh_name(n->name() + "_shape"), *target));
            ctx.note("expand '", n->name(), "' to a constant target");
            changed = true;
          }
        }
      }
    }
    // Dead nodes go last: a probe's keys must not be reused by new values while it is read.
    for (auto it = order.rbegin(); it != order.rend(); ++it) remove_if_dead(graph, *it);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_symbolic_shapes() {
  return std::make_unique<FoldSymbolicShapes>();
}

}  // namespace lumen
