// Merges nodes that compute the same thing: the same op on the same input values (same order,
// same omitted inputs) with equal attributes. Users of the later node read the earlier one's
// outputs. Small identical constants merge first, so duplicated initializers do not hide a match.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// Constants up to this size are compared byte by byte; larger ones are rarely duplicated.
constexpr size_t kMaxMergedConstantBytes = 4096;

bool is_live(const Graph &graph, const Node *node) {
  return std::any_of(node->outputs().begin(), node->outputs().end(), [&](const Value *v) {
    return !v->users().empty() || is_graph_output(graph, v);
  });
}

bool same_bytes(const void *a, const void *b, size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

bool same_tensor(const Tensor &a, const Tensor &b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return same_bytes(ca.raw_data(), cb.raw_data(), ca.nbytes());
}

// Floats compare by bits: 0.0 and -0.0 (or two NaN payloads) may make a difference to an op.
bool same_attr(const AttrValue &a, const AttrValue &b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        const T &y = std::get<T>(b);
        if constexpr (std::is_same_v<T, double>) {
          return same_bytes(&x, &y, sizeof(double));
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          return x.size() == y.size() && same_bytes(x.data(), y.data(), x.size() * sizeof(double));
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return same_tensor(x, y);
        } else {
          return x == y;
        }
      },
      a);
}

bool same_attrs(const Attributes &a, const Attributes &b) {
  if (a.items().size() != b.items().size()) return false;
  auto it = b.items().begin();
  for (const auto &[name, value] : a.items()) {
    if (name != it->first || !same_attr(value, it->second)) return false;
    ++it;
  }
  return true;
}

// Op and input identities: nodes with the same key are candidates, compared by attributes next.
std::string node_key(const Node *node) {
  std::string key = node->op();
  for (const Value *in : node->inputs()) {
    key += '|';
    key += std::to_string(reinterpret_cast<uintptr_t>(in));
  }
  return key;
}

// dtype, shape and bytes of a small constant; empty for constants too large to compare.
std::string constant_key(const Value *v) {
  const Tensor &t = v->constant();
  if (t.nbytes() > kMaxMergedConstantBytes) return "";
  const Tensor c = t.contiguous();
  std::string key = str(dtype_name(t.dtype()), t.shape().to_string(), ":");
  key.append(static_cast<const char *>(c.raw_data()), c.nbytes());
  return key;
}

class CommonSubexpressionElimination final : public Pass {
 public:
  std::string_view name() const override { return "common_subexpression_elimination"; }

  bool run(Graph &graph, PassContext &ctx) override {
    const bool merged_constants = merge_constants(graph, ctx);
    return merge_nodes(graph, ctx) || merged_constants;
  }

 private:
  static bool merge_constants(Graph &graph, PassContext &ctx) {
    bool changed = false;
    std::unordered_map<std::string, Value *> first_by_key;
    for (const Node *node : graph.topological_order()) {
      for (Value *in : node->inputs()) {
        if (!in || !in->is_constant()) continue;
        const std::string key = constant_key(in);
        if (key.empty()) continue;
        Value *&first = first_by_key.try_emplace(key, in).first->second;
        if (first == in) continue;
        const std::string name = in->name();
        if (!rewire_uses(graph, in, first)) continue;
        ctx.note("merged constant '", name, "' into identical '", first->name(), "'");
        changed = true;
      }
    }
    return changed;
  }

  // Topological order: once a duplicate's users read the kept node, they become duplicates of
  // the kept node's users in turn, so whole duplicated chains collapse in one run.
  static bool merge_nodes(Graph &graph, PassContext &ctx) {
    bool changed = false;
    std::unordered_map<std::string, std::vector<Node *>> kept_by_key;
    for (Node *node : graph.topological_order()) {
      if (is_nondeterministic(node->op()) || !is_live(graph, node)) continue;
      std::vector<Node *> &candidates = kept_by_key[node_key(node)];
      const auto match = std::find_if(candidates.begin(), candidates.end(), [&](const Node *kept) {
        return same_attrs(kept->attrs(), node->attrs());
      });
      if (match == candidates.end()) {
        candidates.push_back(node);
        continue;
      }
      const Node *kept = *match;
      bool rewired = false;
      for (size_t i = 0; i < node->outputs().size(); ++i)
        rewired = rewire_uses(graph, node->output(i), kept->output(i)) || rewired;
      if (!rewired) continue;
      ctx.note("merged ", node->op(), " '", node->name(), "' into identical '", kept->name(), "'");
      remove_if_dead(graph, node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_common_subexpression_elimination() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace lumen
