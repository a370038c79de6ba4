// widen_half_precision (run by the compiler on half-precision graphs) and conv_nd_to_conv2d.
#include <gtest/gtest.h>

#include "graph/passes/widen_half_precision.h"
#include "lumen/ops.h"
#include "pass_test_util.h"

namespace lumen::testing {
namespace {

Tensor cast_to(const Tensor &t, DType dtype) {
  return call_op("cast", {t}, {{"to", std::string(dtype_name(dtype))}})[0];
}

int count(const Graph &g, const std::string &op) {
  const auto counts = op_counts(g);
  const auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

// x [2, 8] -> matmul w1 -> transpose -> matmul w2 -> y, all in `dtype`, the weights values of
// `weights_dtype` (so that a float32 chain can hold the half-precision chain's weights).
Graph chain(DType dtype, DType weights_dtype) {
  Graph g;
  const auto weight = [&](const Shape &shape, uint64_t seed) {
    return cast_to(cast_to(Tensor::randn(shape, seed), weights_dtype), dtype);
  };
  Value *x = g.add_input("x", {2, 8}, dtype);
  Value *w1 = g.add_constant("w1", weight({8, 6}, 1));
  Value *w2 = g.add_constant("w2", weight({2, 3}, 2));
  Value *h = g.add_op("matmul", {x, w1}, {}, "h");
  Value *t = g.add_op("transpose", {h}, {{"perm", std::vector<int64_t>{1, 0}}}, "t");
  g.mark_output(g.add_op("matmul", {t, w2}, {}, "y"));
  return g;
}

bool is_matmul(const Node &n) {
  return n.op() == "matmul";
}
bool any_op(const Node &) {
  return true;
}

TEST(WidenHalfPrecision, ChainRunsInFloat32BetweenOneCastInAndOneOut) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Graph g = chain(dtype, dtype);
    ASSERT_TRUE(widen_half_precision(g, is_matmul, any_op));
    EXPECT_NO_THROW(g.verify());
    // The input cast once; the weights converted in place (no cast node); the transpose between
    // the two matmuls widened with them; one rounding at the end.
    EXPECT_EQ(count(g, "cast"), 2) << g.to_string();
    EXPECT_EQ(count(g, "matmul"), 2);
    for (const Node *n : g.nodes())
      if (n->op() != "cast") {
        for (const Value *in : n->inputs()) EXPECT_EQ(in->dtype(), DType::Float32) << n->name();
        EXPECT_EQ(n->output()->dtype(), DType::Float32) << n->name();
      }
    ASSERT_EQ(g.outputs().size(), 1u);
    EXPECT_EQ(g.outputs()[0]->name(), "y");
    EXPECT_EQ(g.outputs()[0]->dtype(), dtype);
    // The float32 computation rounded once: exactly the float32 graph's result, cast.
    Graph wide = chain(DType::Float32, dtype);
    const Tensor x = cast_to(Tensor::randn({2, 8}, 3), dtype);
    Runtime rt(RuntimeOptions{.num_threads = 2});
    const Tensor got = g.compile(&rt)->execute({x})[0];
    const Tensor want = cast_to(wide.compile(&rt)->execute({cast_to(x, DType::Float32)})[0], dtype);
    EXPECT_TRUE(all_close(cast_to(got, DType::Float32), cast_to(want, DType::Float32), 0, 0));
    // Idempotent: nothing half-precision is left to widen.
    EXPECT_FALSE(widen_half_precision(g, is_matmul, any_op));
  }
}

TEST(WidenHalfPrecision, LeavesNodesThePredicatesKeep) {
  Graph g = chain(DType::Float16, DType::Float16);
  EXPECT_FALSE(widen_half_precision(
      g, [](const Node &) { return false; }, any_op));
  EXPECT_EQ(count(g, "cast"), 0);
  // A transpose alone (no widened input) stays half precision.
  Graph h = chain(DType::Float16, DType::Float16);
  ASSERT_TRUE(widen_half_precision(
      h, [](const Node &n) { return n.name() == "y"; }, any_op));
  EXPECT_EQ(h.find_value("t")->dtype(), DType::Float16);
}

TEST(ConvNdToConv2d, TwoSpatialDimsOfFloat32BecomeConv2d) {
  Graph g;
  Value *x = g.add_input("x", {1, 4, 9, 7});
  Value *w = g.add_constant("w", Tensor::randn({6, 2, 3, 2}, 1));
  Value *b = g.add_constant("b", Tensor::randn({6}, 2));
  const Attributes attrs{{"strides", std::vector<int64_t>{2, 1}},
                         {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                         {"dilations", std::vector<int64_t>{1, 2}},
                         {"group", int64_t{2}}};
  g.mark_output(g.add_op("conv_nd", {x, w, b}, attrs, "y"));
  Graph original = g.clone();
  auto pass = make_conv_nd_to_conv2d();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "conv2d"), 1);
  EXPECT_EQ(count(g, "conv_nd"), 0);
  EXPECT_TRUE(same_outputs(original, g, {Tensor::randn({1, 4, 9, 7}, 3)}, 1e-5, 1e-5));
}

TEST(ConvNdToConv2d, KeepsOtherRanksAndDtypes) {
  Graph g;
  Value *x3 = g.add_input("x3", {1, 2, 4, 4, 4});
  g.mark_output(
      g.add_op("conv_nd", {x3, g.add_constant("w3", Tensor::randn({2, 2, 2, 2, 2}, 1))}, {}, "y3"));
  Value *h = g.add_input("h", {1, 2, 4, 4}, DType::Float16);
  g.mark_output(g.add_op(
      "conv_nd", {h, g.add_constant("wh", cast_to(Tensor::randn({2, 2, 2, 2}, 2), DType::Float16))},
      {}, "yh"));
  auto pass = make_conv_nd_to_conv2d();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "conv_nd"), 2);
}

}  // namespace
}  // namespace lumen::testing
