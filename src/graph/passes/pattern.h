// Small matching helpers shared by the passes. Matching never modifies the graph.
#pragma once

#include <algorithm>
#include <optional>
#include <string_view>

#include "lumen/graph.h"

namespace lumen {

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

// The value of a one-element constant of a floating or integer dtype.
std::optional<double> scalar_constant(const Value *v);

// Whether every element of constant `v` equals `expected` (any element count).
bool constant_all_equal(const Value *v, double expected);

}  // namespace lumen
