// Helpers for pass tests: run one pass on a graph, check what it changed, and check that the
// optimized graph computes what the original did.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "graph/passes/pass.h"
#include "lumen/lumen.h"

namespace lumen::testing {

inline std::map<std::string, int> op_counts(const Graph &graph) {
  std::map<std::string, int> counts;
  for (const Node *n : graph.nodes()) ++counts[n->op()];
  return counts;
}

// Runs `pass` once (expecting `changed`) and a second time (expecting no change: idempotence).
// Verifies the graph after each run and returns the notes of the first run.
inline std::vector<std::string> run_pass(Pass &pass, Graph &graph, bool changed = true) {
  PassContext first, second;
  EXPECT_EQ(pass.run(graph, first), changed) << pass.name();
  graph.remove_unused_constants();
  EXPECT_NO_THROW(graph.verify());
  EXPECT_FALSE(pass.run(graph, second)) << pass.name() << " is not idempotent";
  EXPECT_NO_THROW(graph.verify());
  return first.changes();
}

// Executes both graphs on the same inputs (on `backend`, default: preferred per node) and checks
// every output matches.
inline ::testing::AssertionResult same_outputs(const Graph &expected, const Graph &actual,
                                               const std::vector<Tensor> &inputs,
                                               double rtol = 1e-5, double atol = 1e-5,
                                               const std::string &backend = "") {
  Runtime rt(RuntimeOptions{.num_threads = 2, .backend = backend});
  const auto want = expected.compile(&rt)->execute(inputs);
  const auto got = actual.compile(&rt)->execute(inputs);
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "output counts differ";
  for (size_t i = 0; i < want.size(); ++i) {
    auto r = all_close(got[i], want[i], rtol, atol);
    if (!r) return r << " [output " << i << "]";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace lumen::testing
