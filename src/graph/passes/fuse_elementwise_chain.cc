// Fuses maximal chains of >= 2 element-wise nodes into one fused_elementwise node, so the chain
// runs as one loop and its intermediates never go to memory.
//
// A node can be a step when its op is in the fused_elementwise catalog, its output is float32 or
// float64, and one of its inputs (the "running" input) has the output's shape while the other
// operand of a binary step holds one element or has that same shape (so the running value is never
// broadcast). Shapes may be symbolic (same_shape: the same for every size of the graph's symbolic
// dims); the fused op checks them again at run time. A step joins the chain of its running input's
// producer when that producer is a step too and its output has no other use (and is not a graph
// output). The fused node's input 0 is the running input of the chain's first node.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/ops/fused_elementwise_steps.h"
#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

bool is_one_element(const Value *v) {
  return v->has_shape() && v->shape().is_static() && v->shape().numel() == 1;
}

// The inputs of `node` that can carry the running value (empty when it cannot be a step).
std::vector<size_t> running_inputs(const Node *node) {
  const fused::StepInfo *info = fused::find_step(node->op());
  if (!info || node->outputs().size() != 1) return {};
  const Value *out = node->output();
  if (out->dtype() != DType::Float32 && out->dtype() != DType::Float64) return {};
  if (!known_shape(out)) return {};
  if (!info->binary) return {0};
  if (node->inputs().size() != 2 || !node->input(0) || !node->input(1)) return {};
  std::vector<size_t> candidates;
  for (size_t i = 0; i < 2; ++i) {
    const Value *run = node->input(i), *other = node->input(1 - i);
    if (!same_shape(run, out) || run->dtype() != out->dtype()) continue;
    if (other->dtype() != out->dtype()) continue;
    if (is_one_element(other) || same_shape(other, out)) candidates.push_back(i);
  }
  return candidates;
}

struct Link {
  Node *node;
  size_t running_input;
};

class FuseElementwiseChain final : public Pass {
 public:
  std::string_view name() const override { return "fuse_elementwise_chain"; }

  bool run(Graph &graph, PassContext &ctx) override {
    const std::vector<std::vector<Link>> chains = find_chains(graph);
    for (const std::vector<Link> &chain : chains) fuse(graph, chain, ctx);
    return !chains.empty();
  }

 private:
  // Pure matching: every maximal chain of two or more steps, in topological order.
  static std::vector<std::vector<Link>> find_chains(const Graph &graph) {
    const std::vector<Node *> order = graph.topological_order();
    std::unordered_map<const Node *, std::vector<size_t>> steps;
    for (Node *n : order) {
      auto r = running_inputs(n);
      if (!r.empty()) steps.emplace(n, std::move(r));
    }
    // The step each step continues (its running input's producer), preferring input 0.
    std::unordered_map<const Node *, Link> prev;
    std::unordered_set<const Node *> has_next;
    for (Node *n : order) {
      auto it = steps.find(n);
      if (it == steps.end()) continue;
      for (size_t i : it->second) {
        Node *p = n->input(i)->producer();
        if (!p || !steps.count(p) || !has_single_use(graph, n->input(i))) continue;
        prev.emplace(n, Link{p, i});
        has_next.insert(p);
        break;
      }
    }
    std::vector<std::vector<Link>> chains;
    for (Node *n : order) {
      if (!steps.count(n) || has_next.count(n)) continue;  // walk back from each chain's end
      const Value *end = n->output();
      // Already dead (e.g. left by another pass): fusing it would only add work.
      if (end->users().empty() && !is_graph_output(graph, end)) continue;
      std::vector<Link> chain;
      Node *cur = n;
      for (auto it = prev.find(cur); it != prev.end(); it = prev.find(cur)) {
        chain.push_back({cur, it->second.running_input});
        cur = it->second.node;
      }
      if (chain.empty()) continue;
      // The chain's first node: its preferred running input becomes x0.
      chain.push_back({cur, steps.at(cur).front()});
      std::reverse(chain.begin(), chain.end());
      chains.push_back(std::move(chain));
    }
    return chains;
  }

  static void fuse(Graph &graph, const std::vector<Link> &chain, PassContext &ctx) {
    // Inputs are read now, not at matching time: an earlier fusion may have replaced them.
    const Node *head = chain.front().node;
    std::vector<Value *> inputs = {head->input(chain.front().running_input)};
    std::unordered_map<const Value *, int64_t> index_of = {{inputs[0], 0}};
    std::vector<fused::Step> steps;
    std::vector<Node *> nodes;
    for (const Link &link : chain) {
      const Node *n = link.node;
      const fused::StepInfo *info = fused::find_step(n->op());
      fused::Step s{.info = info, .params = fused::params_from_attrs(info->kind, n->attrs())};
      if (info->binary) {
        Value *other = n->input(1 - link.running_input);
        auto [it, added] = index_of.emplace(other, int64_t(inputs.size()));
        if (added) inputs.push_back(other);
        s.operand = it->second;
        s.running_right = link.running_input == 1;
      }
      steps.push_back(s);
      nodes.push_back(link.node);
    }
    Value *tail = chain.back().node->output();
    Value *result = graph.add_op("fused_elementwise", inputs, fused::encode_steps(steps),
                                 graph.fresh_name(head->name()));
    graph.replace_all_uses(tail, result);
    const std::string names = node_labels(nodes);  // before the nodes are removed
    // The chain's nodes are dead now; removing them here (last first) keeps a second run from
    // matching them again.
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.remove_node(it->node);
    ctx.note("fused ", chain.size(), " nodes (", names, ") -> fused_elementwise '",
             result->producer()->name(), "'");
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_elementwise_chain() {
  return std::make_unique<FuseElementwiseChain>();
}

}  // namespace lumen
