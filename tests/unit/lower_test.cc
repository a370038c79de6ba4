// The lower stage (src/compile/lower.h): a float16 matmul, which only the reference backend runs in
// half precision, is widened to float32 for the CPU's kernel (casts where the chain starts and
// ends, the weight converted once); a float32 graph, or a caller pinning a backend, is left alone.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compile/lower.h"

namespace lumen {
namespace {

std::map<std::string, int> ops_of(const Graph &g) {
  std::map<std::string, int> counts;
  for (const Node *n : g.nodes()) ++counts[n->op()];
  return counts;
}

Graph matmul_graph(DType dtype) {
  Graph g;
  Value *x = g.add_input("x", {2, 8}, dtype);
  Tensor w = Tensor::zeros({8, 4}, dtype);
  g.mark_output(g.add_op("matmul", {x, g.add_constant("w", w)}, {}, "mm"));
  return g;
}

TEST(LowerStage, WidensHalfPrecisionNodesTheCpuRunsInFloat32) {
  const Graph half = matmul_graph(DType::Float16);
  const std::optional<Graph> lowered = lower(half, "", 0);
  ASSERT_TRUE(lowered.has_value());
  const auto ops = ops_of(*lowered);
  EXPECT_EQ(ops.at("matmul"), 1);
  EXPECT_EQ(ops.at("cast"), 2) << "one cast in (x), one rounding out; the weight is converted";
  for (const Node *n : lowered->nodes()) {
    if (n->op() != "matmul") continue;
    EXPECT_EQ(n->input(1)->dtype(), DType::Float32);
  }
  EXPECT_EQ(lowered->outputs()[0]->dtype(), DType::Float16);
}

TEST(LowerStage, LeavesFloat32AndPinnedGraphsAlone) {
  EXPECT_FALSE(lower(matmul_graph(DType::Float32), "", 2).has_value());
  EXPECT_FALSE(lower(matmul_graph(DType::Float16), "reference", 2).has_value());
}

}  // namespace
}  // namespace lumen
