// Small matching and rewriting helpers shared by the passes. Matching never modifies the graph.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/graph.h"

namespace lumen {

class PassContext;  // graph/passes/pass.h

inline bool is_graph_output(const Graph &graph, const Value *v) {
  return std::count(graph.outputs().begin(), graph.outputs().end(), v) != 0;
}

// `v` is read by exactly one node (once) and is not a graph output: fusing its producer into that
// node loses nothing.
inline bool has_single_use(const Graph &graph, const Value *v) {
  return v->users().size() == 1 && !is_graph_output(graph, v);
}

// The node producing `v` when it is an `op` node, else nullptr.
inline Node *producer_if(const Value *v, std::string_view op) {
  return v && v->producer() && v->producer()->op() == op ? v->producer() : nullptr;
}

// A value is live while a node reads it or it is a graph output.
inline bool is_live(const Graph &graph, const Value *v) {
  return !v->users().empty() || is_graph_output(graph, v);
}

// Points every use of `from` at `to`. A graph output that `to` cannot stand for (a graph input, a
// constant or another output) keeps its producer; only the node users move. Returns whether any
// use moved.
bool rewire_uses(Graph &graph, Value *from, Value *to);

// A fusion's last step: `follower`'s output becomes `fused` (made from `producer` and `follower`),
// noted as "producer_op 'p' + follower_op 'f' -> fused_op 'x'", and both old nodes are removed so
// a second run cannot match them again. When `fused` cannot stand for the output (see
// Graph::can_replace), removes `fused` instead, leaves the graph as it was and returns false.
bool replace_pair(Graph &graph, PassContext &ctx, Node *producer, Node *follower, Value *fused);

// Removes `node` when none of its outputs is live any more; returns whether it did.
bool remove_if_dead(Graph &graph, Node *node);

// What compile time knows of `v`'s shape: its shape when static; for a graph input, its shape with
// the dims' names; otherwise the symbolic shape probing found (fixed dims, and names for the dims
// that follow the graph's symbolic input dims). nullopt when not even the rank is known.
std::optional<SymbolicShape> known_shape(const Value *v);

// `a` and `b` have the same shape whatever sizes the graph's symbolic dims take: equal fixed dims,
// and the same named symbol (or expression of symbols) for each other dim.
bool same_shape(const Value *a, const Value *b);

// Dim ia of `a` equals dim ib of `b` the same way (negative indices count from the end).
bool same_dim(const Value *a, int64_t ia, const Value *b, int64_t ib);

// Ops whose result changes from run to run: never folded, never merged.
bool is_nondeterministic(std::string_view op);

// The only node reading `v` when it is an `op` node and `v` is not a graph output.
inline Node *sole_user_if(const Graph &graph, const Value *v, std::string_view op) {
  if (!v || !has_single_use(graph, v)) return nullptr;
  Node *user = v->users().front();
  return user->op() == op ? user : nullptr;
}

// The producer of `v` when it is an `op` node and `v` has no other use.
inline Node *sole_producer_if(const Graph &graph, const Value *v, std::string_view op) {
  return v && has_single_use(graph, v) ? producer_if(v, op) : nullptr;
}

// The other input of binary `node` when exactly one of its inputs is `v`, else nullptr.
inline Value *other_input(const Node *node, const Value *v) {
  if (!node || node->inputs().size() != 2) return nullptr;
  if (node->input(0) == v && node->input(1) != v) return node->input(1);
  if (node->input(1) == v && node->input(0) != v) return node->input(0);
  return nullptr;
}

// "mul 'a', add 'b'": how pass notes name a group of nodes.
std::string node_labels(const std::vector<Node *> &nodes);

// The value of a one-element constant of a floating or integer dtype.
std::optional<double> scalar_constant(const Value *v);

// `v` is a one-element constant within `relative_tolerance` of `expected` (exported models round
// constants such as 1/sqrt(2) differently).
bool scalar_near(const Value *v, double expected, double relative_tolerance = 1e-4);

// The values of an int64 or int32 constant (reshape targets, axes, slice bounds), or nullopt for
// anything else.
std::optional<std::vector<int64_t>> constant_ints(const Value *v);

// Whether every element of constant `v` equals `expected` (any element count).
bool constant_all_equal(const Value *v, double expected);

// A constant of conv_out's dtype shaped [1, M, 1, 1] or [M, 1, 1] for a conv output [N, M, H, W]:
// one value per output channel.
bool is_per_channel_constant(const Value *c, const Value *conv_out);

}  // namespace lumen
