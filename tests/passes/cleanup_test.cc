// Level-1 clean-up passes: constant folding, no-op elimination, common subexpression elimination
// and cancelling transposes/reshapes. Each test builds a "before" graph, runs one pass on a copy
// and checks both the op counts and that the outputs did not change.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace lumen::testing {
namespace {

Tensor ints(const Shape &shape, std::vector<int64_t> values) {
  return Tensor::from_vector<int64_t>(shape, values);
}
Tensor ints(std::vector<int64_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return ints(Shape{n}, std::move(values));
}
Tensor floats(const Shape &shape, float value) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value;
  return t;
}

int count(const Graph &g, const std::string &op) {
  const auto counts = op_counts(g);
  const auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

// The constant target a reshape or expand node reads, as a vector (empty when not constant).
std::vector<int64_t> constant_target(const Value *out) {
  const Value *t = out->producer()->input(1);
  if (!t->is_constant()) return {};
  const Tensor &c = t->constant();
  return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
}

// --- constant_folding ----------------------------------------------------------------------------

TEST(CleanupConstantFolding, FoldsArithmeticOnConstants) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *a = g.add_constant("a", Tensor::randn({2, 3}, 1));
  Value *b = g.add_constant("b", Tensor::randn({3}, 2));
  Value *scale = g.add_op("exp", {g.add_op("add", {a, b}, {}, "sum")}, {}, "scale");
  g.mark_output(g.add_op("mul", {x, scale}, {}, "y"));
  Graph before = g.clone();

  auto pass = make_constant_folding();
  const auto notes = run_pass(*pass, g);
  EXPECT_EQ(count(g, "add"), 0);
  EXPECT_EQ(count(g, "exp"), 0);
  EXPECT_EQ(count(g, "mul"), 1);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "folded add 'sum' -> constant [2, 3] float32");
  EXPECT_TRUE(g.find_value("y")->producer()->input(1)->is_constant());
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3}, 3)}));
}

// Shape arithmetic on a static shape becomes a constant target for the reshape.
TEST(CleanupConstantFolding, FoldsShapeChainIntoConstantReshapeTarget) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *shape = g.add_op("shape", {x}, {}, "shape");
  Value *first = g.add_op("gather", {shape, g.add_constant("zero", ints({}, {0}))},
                          {{"axis", int64_t{0}}}, "first");
  Value *dim = g.add_op("unsqueeze", {first}, {{"axes", std::vector<int64_t>{0}}}, "dim");
  Value *target = g.add_op("concat", {dim, g.add_constant("minus_one", ints({-1}))},
                           {{"axis", int64_t{0}}}, "target");
  Value *y = g.add_op("reshape", {x, target}, {}, "y");
  EXPECT_FALSE(y->has_shape());  // the target is only known at run time before folding
  g.mark_output(y);
  Graph before = g.clone();

  auto pass = make_constant_folding();
  const auto notes = run_pass(*pass, g);
  EXPECT_EQ(notes.size(), 4u);
  for (const char *op : {"shape", "gather", "unsqueeze", "concat"})
    EXPECT_EQ(count(g, op), 0) << op;
  ASSERT_EQ(count(g, "reshape"), 1);
  const Value *folded = g.find_value("y")->producer()->input(1);
  ASSERT_TRUE(folded->is_constant());
  EXPECT_EQ(folded->constant().data<int64_t>()[0], 2);
  EXPECT_EQ(folded->constant().data<int64_t>()[1], -1);
  ASSERT_TRUE(g.find_value("y")->has_shape());  // re-inferred from the folded target
  EXPECT_EQ(g.find_value("y")->shape(), (Shape{2, 12}));
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4}, 4)}));
}

// Twelve layers, each reshaping to a target computed from the previous layer's output shape (as
// exporters write transformers): one run of the pass folds them all, each layer's reshape getting
// its static shape before the next layer's shape op is visited again.
TEST(CleanupConstantFolding, FoldsLayeredShapeArithmeticInOneRun) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *h = x;
  constexpr int kLayers = 12;
  for (int layer = 0; layer < kLayers; ++layer) {
    Value *first = g.add_op(
        "gather", {g.add_op("shape", {h}), g.add_constant(g.fresh_name("zero"), ints({}, {0}))},
        {{"axis", int64_t{0}}});
    Value *dim = g.add_op("unsqueeze", {first}, {{"axes", std::vector<int64_t>{0}}});
    // Alternate [2, 12] and [2, 3, 4] so every reshape changes the shape.
    Value *rest = g.add_constant(g.fresh_name("rest"), layer % 2 ? ints({3, 4}) : ints({-1}));
    h = g.add_op("add",
                 {g.add_op("reshape", {h, g.add_op("concat", {dim, rest}, {{"axis", int64_t{0}}})}),
                  g.add_constant(g.fresh_name("one"), Tensor::from_vector<float>({}, {1}))});
  }
  g.mark_output(h);
  Graph before = g.clone();
  auto pass = make_constant_folding();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "shape"), 0);
  EXPECT_EQ(count(g, "concat"), 0);
  ASSERT_TRUE(h->has_shape());
  EXPECT_EQ(h->shape(), (Shape{2, 3, 4}));  // the last layer is odd
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4}, 5)}));
}

TEST(CleanupConstantFolding, FoldsShapeWithStartEndAndSize) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  const auto as_float = [&](Value *v) {
    return g.add_op("cast", {v}, {{"to", std::string("float32")}});
  };
  Value *last = g.add_op("shape", {x}, {{"start", int64_t{-1}}}, "last");                // [4]
  Value *middle = g.add_op("shape", {x}, {{"start", int64_t{1}}, {"end", int64_t{2}}});  // [3]
  Value *n = g.add_op("size", {x}, {}, "n");                                             // 24
  Value *scale =
      g.add_op("add", {g.add_op("add", {as_float(last), as_float(middle)}), as_float(n)});
  Value *y = g.add_op("mul", {x, scale});
  g.mark_output(y);
  Graph before = g.clone();

  auto pass = make_constant_folding();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "shape"), 0);
  EXPECT_EQ(count(g, "size"), 0);
  EXPECT_EQ(count(g, "cast"), 0);
  EXPECT_EQ(count(g, "add"), 0);
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4}, 5)}));
}

TEST(CleanupConstantFolding, KeepsShapeOfDynamicInput) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, 3});
  g.mark_output(g.add_op("reshape", {x, g.add_op("shape", {x})}));
  auto pass = make_constant_folding();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "shape"), 1);
}

TEST(CleanupConstantFolding, DoesNotMaterializeHugeConstant) {
  Graph g;
  Value *x = g.add_input("x", {4096, 4096});
  Value *zeros = g.add_op("constant_of_shape", {g.add_constant("dims", ints({4096, 4096}))});
  g.mark_output(g.add_op("add", {x, zeros}));
  auto pass = make_constant_folding();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "constant_of_shape"), 1);
}

// A weight written as constant_of_shape (the ONNX light models): folded though larger than the
// cheap-op limit, since the conv packs constant weights when the model is compiled; past the
// budget (here 4 GiB) it stays a node and nothing is allocated.
TEST(CleanupConstantFolding, FoldsWeightsForPreparedKernels) {
  Graph g;
  Value *x = g.add_input("x", {1, 64, 8, 8});
  Tensor half = floats({1}, 0.5f);
  Value *w = g.add_op("constant_of_shape", {g.add_constant("dims", ints({256, 64, 3, 3}))},
                      {{"value", half}});
  g.mark_output(g.add_op("conv2d", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Graph before = g.clone();
  auto pass = make_constant_folding();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "constant_of_shape"), 0);
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({1, 64, 8, 8}, 7)}));

  Graph huge;
  Value *hx = huge.add_input("x", {1, 1024, 8, 8});
  Value *hw =
      huge.add_op("constant_of_shape", {huge.add_constant("dims", ints({1 << 20, 1024, 1, 1}))});
  huge.mark_output(huge.add_op("conv2d", {hx, hw}));
  run_pass(*pass, huge, /*changed=*/false);
  EXPECT_EQ(count(huge, "constant_of_shape"), 1);
}

TEST(CleanupConstantFolding, FoldsSmallConstantOfShape) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Tensor one = floats({1}, 1.5f);
  Value *filled =
      g.add_op("constant_of_shape", {g.add_constant("dims", ints({2, 3}))}, {{"value", one}});
  g.mark_output(g.add_op("add", {x, filled}));
  Graph before = g.clone();
  auto pass = make_constant_folding();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "constant_of_shape"), 0);
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3}, 6)}));
}

// A graph output must stay the output of a node: a constant cannot take its name.
TEST(CleanupConstantFolding, LeavesFoldableGraphOutput) {
  Graph g;
  Value *a = g.add_constant("a", Tensor::randn({4}, 1));
  g.add_input("x", {4});
  g.mark_output(g.add_op("neg", {a}, {}, "y"));
  auto pass = make_constant_folding();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "neg"), 1);
}

// A graph output that also feeds a node: the node reads the constant, the output keeps its node.
TEST(CleanupConstantFolding, RewiresUsersOfFoldableGraphOutput) {
  Graph g;
  Value *x = g.add_input("x", {4});
  Value *n = g.add_op("neg", {g.add_constant("a", Tensor::randn({4}, 1))}, {}, "n");
  g.mark_output(n);
  g.mark_output(g.add_op("add", {x, n}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_constant_folding();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "neg"), 1);
  EXPECT_TRUE(g.find_value("y")->producer()->input(1)->is_constant());
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({4}, 7)}));
}

// The kernel rejects the index: the node stays and reports the error when the graph runs.
TEST(CleanupConstantFolding, LeavesNodeWhoseKernelThrows) {
  Graph g;
  Value *x = g.add_input("x", {1});
  Value *picked = g.add_op("gather", {g.add_constant("data", Tensor::randn({3}, 1)),
                                      g.add_constant("index", ints({1}, {7}))});
  g.mark_output(g.add_op("add", {x, picked}));
  auto pass = make_constant_folding();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "gather"), 1);
}

TEST(CleanupConstantFolding, LeavesNodeWithRuntimeInput) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  g.mark_output(g.add_op("add", {x, g.add_constant("a", Tensor::randn({2, 3}, 1))}));
  auto pass = make_constant_folding();
  run_pass(*pass, g, /*changed=*/false);
}

// --- eliminate_no_ops ----------------------------------------------------------------------------

TEST(CleanupEliminateNoOps, RemovesEveryKindOfNoOp) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *v = g.add_op("relu", {x});
  v = g.add_op("cast", {v}, {{"to", std::string("float32")}});
  v = g.add_op("reshape", {v}, {{"shape", std::vector<int64_t>{2, -1}}});
  v = g.add_op("transpose", {v}, {{"perm", std::vector<int64_t>{0, 1}}});
  v = g.add_op("slice",
               {v, g.add_constant("starts", ints({0, 0})), g.add_constant("ends", ints({100, 3}))});
  v = g.add_op("concat", {v}, {{"axis", int64_t{1}}});
  v = g.add_op("pad", {v, g.add_constant("pads", ints({0, 0, 0, 0}))});
  v = g.add_op("expand", {v, g.add_constant("to", ints({2, 3}))});
  v = g.add_op("squeeze", {v});
  v = g.add_op("add", {v, g.add_constant("zero", floats({3}, 0.f))});
  v = g.add_op("add", {g.add_constant("zero2", floats({1}, 0.f)), v});
  v = g.add_op("sub", {v, g.add_constant("zero3", floats({2, 3}, 0.f))});
  v = g.add_op("mul", {g.add_constant("one", floats({}, 1.f)), v});
  v = g.add_op("div", {v, g.add_constant("one2", floats({3}, 1.f))});
  g.mark_output(g.add_op("tanh", {v}, {}, "y"));
  Graph before = g.clone();

  auto pass = make_eliminate_no_ops();
  const auto notes = run_pass(*pass, g);
  EXPECT_EQ(notes.size(), 13u);
  EXPECT_EQ(g.num_nodes(), 2u);  // relu, tanh
  EXPECT_EQ(g.find_value("y")->producer()->input(0)->producer()->op(), "relu");
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3}, 8)}));
}

TEST(CleanupEliminateNoOps, KeepsNodesThatDoSomething) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *v = g.add_op("relu", {x});
  v = g.add_op("sub", {g.add_constant("zero", floats({2, 3}, 0.f)), v});      // 0 - x negates
  v = g.add_op("add", {v, g.add_constant("zeros", floats({4, 2, 3}, 0.f))});  // broadcasts
  v = g.add_op("div", {g.add_constant("one", floats({1}, 1.f)), v});          // 1 / x
  v = g.add_op("mul", {v, g.add_constant("two", floats({1}, 2.f))});
  v = g.add_op("cast", {v}, {{"to", std::string("float64")}});
  v = g.add_op("transpose", {v}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  v = g.add_op("slice",
               {v, g.add_constant("starts", ints({-1})), g.add_constant("ends", ints({-100})),
                g.add_constant("axes", ints({2})), g.add_constant("steps", ints({-1}))});
  v = g.add_op("reshape", {v}, {{"shape", std::vector<int64_t>{4, 6}}});
  v = g.add_op("pad", {v, g.add_constant("pads", ints({0, 1, 0, 0}))});
  v = g.add_op("transpose", {v});  // default perm reverses rank-2
  g.mark_output(v);
  Graph before = g.clone();
  auto pass = make_eliminate_no_ops();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(op_counts(g), op_counts(before));
}

// y = cast(x) to x's dtype with y a graph output and x a graph input: y must keep a producer.
TEST(CleanupEliminateNoOps, KeepsNoOpBetweenGraphInputAndOutput) {
  Graph g;
  Value *x = g.add_input("x", {2});
  g.mark_output(g.add_op("cast", {x}, {{"to", std::string("float32")}}, "y"));
  auto pass = make_eliminate_no_ops();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "cast"), 1);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
}

// A no-op producing a graph output from a node's value: the output keeps its name.
TEST(CleanupEliminateNoOps, GraphOutputKeepsItsName) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *r = g.add_op("relu", {x}, {}, "r");
  g.mark_output(g.add_op("reshape", {r}, {{"shape", std::vector<int64_t>{2, 3}}}, "y"));
  Graph before = g.clone();
  auto pass = make_eliminate_no_ops();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "reshape"), 0);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer()->op(), "relu");
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3}, 9)}));
}

// --- common_subexpression_elimination ------------------------------------------------------------

TEST(CleanupCse, MergesDuplicatedChainsInOneRun) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *c = g.add_constant("c", Tensor::randn({3}, 1));
  Value *a1 = g.add_op("add", {g.add_op("relu", {x}), c});
  Value *a2 = g.add_op("add", {g.add_op("relu", {x}), c});
  g.mark_output(g.add_op("mul", {a1, a2}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_common_subexpression_elimination();
  const auto notes = run_pass(*pass, g);
  EXPECT_EQ(notes.size(), 2u);
  EXPECT_EQ(count(g, "relu"), 1);
  EXPECT_EQ(count(g, "add"), 1);
  const Node *mul = g.find_value("y")->producer();
  EXPECT_EQ(mul->input(0), mul->input(1));
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3}, 10)}));
}

TEST(CleanupCse, MergesIdenticalConstantsFirst) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *a1 = g.add_op("add", {x, g.add_constant("b1", Tensor::randn({3}, 5))});
  Value *a2 = g.add_op("add", {x, g.add_constant("b2", Tensor::randn({3}, 5))});
  g.mark_output(g.add_op("sub", {a1, a2}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_common_subexpression_elimination();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "add"), 1);
  EXPECT_EQ(g.find_value("b2"), nullptr);  // unused after the merge, then removed
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3}, 11)}));
}

TEST(CleanupCse, KeepsNodesThatDiffer) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *y = g.add_input("z", {2, 3});
  Value *l1 = g.add_op("leaky_relu", {x}, {{"alpha", 0.1}});
  Value *l2 = g.add_op("leaky_relu", {x}, {{"alpha", 0.2}});
  Value *s1 = g.add_op("sub", {x, y});
  Value *s2 = g.add_op("sub", {y, x});  // same inputs, other order
  Value *b1 = g.add_op("add", {x, g.add_constant("b1", Tensor::randn({3}, 5))});
  Value *b2 = g.add_op("add", {x, g.add_constant("b2", Tensor::randn({3}, 6))});
  Value *sum = g.add_op("add", {g.add_op("add", {l1, l2}), g.add_op("add", {s1, s2})});
  g.mark_output(g.add_op("add", {sum, g.add_op("add", {b1, b2})}));
  Graph before = g.clone();
  auto pass = make_common_subexpression_elimination();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(op_counts(g), op_counts(before));
}

// Two graph outputs computed alike: both must keep a producer of their own.
TEST(CleanupCse, KeepsDuplicatedGraphOutputs) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  g.mark_output(g.add_op("relu", {x}, {}, "y1"));
  g.mark_output(g.add_op("relu", {x}, {}, "y2"));
  auto pass = make_common_subexpression_elimination();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "relu"), 2);
}

// --- cancel_transposes ---------------------------------------------------------------------------

TEST(CleanupCancelTransposes, InversePairGoesStraightToInput) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *r = g.add_op("relu", {x});
  Value *t1 = g.add_op("transpose", {r}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  Value *t2 = g.add_op("transpose", {t1}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  g.mark_output(g.add_op("tanh", {t2}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_cancel_transposes();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "transpose"), 0);
  EXPECT_EQ(g.find_value("y")->producer()->input(0)->producer()->op(), "relu");
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4}, 12)}));
}

TEST(CleanupCancelTransposes, DefaultPermsCancel) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *r = g.add_op("relu", {x});
  g.mark_output(g.add_op("transpose", {g.add_op("transpose", {r})}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_cancel_transposes();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "transpose"), 0);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4}, 13)}));
}

// Perms that are not each other's inverse: composing in the wrong order gives another perm.
TEST(CleanupCancelTransposes, ComposesChainIntoOneTranspose) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4, 5});
  Value *v = g.add_op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 2, 3, 0}}});
  v = g.add_op("transpose", {v}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  v = g.add_op("transpose", {v}, {{"perm", std::vector<int64_t>{3, 1, 0, 2}}});
  g.mark_output(g.add_op("relu", {v}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_cancel_transposes();
  run_pass(*pass, g);
  EXPECT_EQ(count(g, "transpose"), 1);
  EXPECT_EQ(g.find_value("y")->shape(), before.find_value("y")->shape());
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4, 5}, 14)}));
}

TEST(CleanupCancelTransposes, KeepsPairWhoseInnerHasOtherUses) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *t1 = g.add_op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  Value *t2 = g.add_op("transpose", {t1}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  g.mark_output(t1);
  g.mark_output(t2);
  auto pass = make_cancel_transposes();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "transpose"), 2);
}

// torch's dynamo export of K^T: heads merged into the batch ([B * H, S, D]), the last two dims
// swapped, heads split back out. One transpose of the 4-D value; with a symbolic batch too. A
// split that does not restore the merged dims (3 x 2 from 2 x 3) is no transpose and stays.
TEST(CleanupCancelTransposes, BatchedTransposeOnMergedDimsIsOneTranspose) {
  for (int variant = 0; variant < 3; ++variant) {
    Graph g;
    const bool symbolic = variant == 1, other_split = variant == 2;
    Value *x = g.add_input("x", {symbolic ? kUnknownDim : 2, 3, 5, 4});
    if (symbolic) g.set_dim_names(x, {"batch", "", "", ""});
    Value *v = g.add_op("reshape", {x, g.add_constant("merge", ints({-1, 5, 4}))});
    v = g.add_op("transpose", {v}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
    const std::vector<int64_t> split =
        other_split ? std::vector<int64_t>{3, 2, 4, 5} : std::vector<int64_t>{-1, 3, 4, 5};
    v = g.add_op("reshape", {v, g.add_constant("split", ints(split))});
    g.mark_output(g.add_op("relu", {v}, {}, "y"));
    g.infer_symbolic_shapes();
    Graph before = g.clone();
    auto pass = make_cancel_transposes();
    run_pass(*pass, g, !other_split);
    EXPECT_EQ(count(g, "reshape"), other_split ? 2 : 0);
    if (!other_split) {
      const Node *t = g.find_value("y")->producer()->input(0)->producer();
      ASSERT_EQ(t->op(), "transpose");
      EXPECT_EQ(t->input(0), g.find_value("x"));
      EXPECT_EQ(t->attrs().get_ints("perm", {}), (std::vector<int64_t>{0, 1, 3, 2}));
    }
    EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 5, 4}, 15)}));
  }
}

TEST(CleanupCancelTransposes, MergesReshapePair) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *v = g.add_op("reshape", {x}, {{"shape", std::vector<int64_t>{6, 4}}});
  v = g.add_op("reshape", {v, g.add_constant("target", ints({4, -1}))});
  g.mark_output(g.add_op("relu", {v}, {}, "y"));
  Graph before = g.clone();
  auto pass = make_cancel_transposes();
  run_pass(*pass, g);
  ASSERT_EQ(count(g, "reshape"), 1);
  EXPECT_EQ(g.find_value("y")->producer()->input(0)->producer()->input(0), g.find_value("x"));
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({2, 3, 4}, 15)}));
}

// A 0 in the outer target copies a dim of the inner result, which x does not have.
TEST(CleanupCancelTransposes, KeepsReshapePairWhoseTargetCopiesDims) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *v = g.add_op("reshape", {x}, {{"shape", std::vector<int64_t>{6, 4}}});
  g.mark_output(g.add_op("reshape", {v}, {{"shape", std::vector<int64_t>{0, 2, 2}}}));
  auto pass = make_cancel_transposes();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(count(g, "reshape"), 2);
}

// --- fold_symbolic_shapes
// --------------------------------------------------------------------------

// An attention block as exporters write it: heads split by view(batch, seq, 2, 4) and merged by
// view(batch, seq, 8), both targets computed from shape(x) at run time.
Graph attention_heads_graph() {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, kUnknownDim, 8});
  g.set_dim_names(x, {"batch", "seq", ""});
  const Attributes axis0{{"axis", int64_t{0}}};
  auto dim = [&](Value *of, int64_t i, const std::string &name) {
    Value *d =
        g.add_op("gather", {g.add_op("shape", {of}), g.add_constant(name + "_i", ints({}, {i}))},
                 axis0, name);
    return g.add_op("unsqueeze", {d}, {{"axes", std::vector<int64_t>{0}}});
  };
  Value *q = g.add_op("matmul", {x, g.add_constant("w", Tensor::randn({8, 8}, 4))}, {}, "q");
  Value *split_to = g.add_op(
      "concat", {dim(x, 0, "b"), dim(x, 1, "s"), g.add_constant("heads", ints({2, 4}))}, axis0);
  Value *heads = g.add_op("reshape", {q, split_to}, {}, "split");
  Value *t = g.add_op("transpose", {heads}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, "t");
  Value *back = g.add_op("transpose", {g.add_op("sigmoid", {t})},
                         {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, "back");
  // The fixed last dim read from the shape too: shape(q)[2] is 8 whatever batch and seq are.
  Value *merge_to =
      g.add_op("concat", {dim(back, 0, "b2"), dim(back, 1, "s2"), dim(q, 2, "width")}, axis0);
  Value *merged = g.add_op("reshape", {back, merge_to}, {}, "merge");
  // An expand to x's own shape does nothing.
  g.mark_output(g.add_op("expand", {merged, g.add_op("shape", {x})}, {}, "y"));
  return g;
}

TEST(CleanupFoldSymbolicShapes, ReshapeTargetsBecomeConstants) {
  Graph g = attention_heads_graph();
  const Graph before = g.clone();
  auto pass = make_fold_symbolic_shapes();
  run_pass(*pass, g);
  // batch and seq copy the input's dims (0), the heads are fixed; shape(q)[2] folded to 8.
  EXPECT_EQ(constant_target(g.find_value("split")), (std::vector<int64_t>{0, 0, 2, 4}));
  // The expand is gone: the merging reshape gives the output (which keeps its name).
  EXPECT_EQ(count(g, "expand"), 0);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(constant_target(g.outputs()[0]), (std::vector<int64_t>{0, 0, 8}));
  EXPECT_EQ(count(g, "shape"), 0);
  EXPECT_EQ(count(g, "gather"), 0);
  for (const Shape &shape : {Shape{2, 5, 8}, Shape{1, 1, 8}, Shape{3, 17, 8}})
    EXPECT_TRUE(same_outputs(before, g, {random_tensor(shape, 5)})) << shape.to_string();
}

// A dim that follows a symbol but not the input's dim at its position becomes -1; two such dims
// leave the target as it is.
TEST(CleanupFoldSymbolicShapes, OneFreeDimIsInferred) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, kUnknownDim, 6});
  g.set_dim_names(x, {"batch", "seq", ""});
  const Attributes axis0{{"axis", int64_t{0}}};
  Value *shape = g.add_op("shape", {x});
  auto at = [&](int64_t i) {
    return g.add_op(
        "unsqueeze",
        {g.add_op("gather", {shape, g.add_constant(g.fresh_name("i"), ints({}, {i}))}, axis0)},
        {{"axes", std::vector<int64_t>{0}}});
  };
  // [batch * seq, 6] and [seq, batch, 6]: the first has one free dim, the second two.
  Value *rows = g.add_op("mul", {at(0), at(1)});
  Value *flat = g.add_op("reshape", {x, g.add_op("concat", {rows, at(2)}, axis0)}, {}, "flat");
  Value *swapped =
      g.add_op("reshape", {x, g.add_op("concat", {at(1), at(0), at(2)}, axis0)}, {}, "swapped");
  g.mark_output(flat);
  g.mark_output(swapped);
  const Graph before = g.clone();
  auto pass = make_fold_symbolic_shapes();
  run_pass(*pass, g);
  EXPECT_EQ(constant_target(g.find_value("flat")), (std::vector<int64_t>{-1, 6}));
  EXPECT_TRUE(constant_target(g.find_value("swapped")).empty());
  for (const Shape &shape : {Shape{2, 5, 6}, Shape{4, 1, 6}})
    EXPECT_TRUE(same_outputs(before, g, {random_tensor(shape, 6)})) << shape.to_string();
}

// Shape arithmetic whose value varies with the sizes stays: min(seq, 4096) is seq below 4096 and
// 4096 above, and the probes reach both sides.
TEST(CleanupFoldSymbolicShapes, KeepsSizeDependentArithmetic) {
  Graph g;
  Value *x = g.add_input("x", {1, kUnknownDim});
  g.set_dim_names(x, {"", "seq"});
  Value *seq = g.add_op("gather", {g.add_op("shape", {x}), g.add_constant("one", ints({1}))},
                        {{"axis", int64_t{0}}});
  Value *capped = g.add_op("minimum", {seq, g.add_constant("cap", ints({4096}))}, {}, "capped");
  Value *target =
      g.add_op("concat", {g.add_constant("lead", ints({1})), capped}, {{"axis", int64_t{0}}});
  g.mark_output(g.add_op("expand", {g.add_constant("v", floats({1, 1}, 2.5f)), target}, {}, "y"));
  auto pass = make_fold_symbolic_shapes();
  run_pass(*pass, g, false);
}

// An expand that broadcasts a fixed dim keeps the symbolic ones from its input: target 1 there.
TEST(CleanupFoldSymbolicShapes, ExpandOfFixedDimsGetsConstantTarget) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, 1, 4});
  g.set_dim_names(x, {"batch", "", ""});
  Value *shape = g.add_op("shape", {x});
  Value *lead =
      g.add_op("slice", {shape, g.add_constant("s0", ints({0})), g.add_constant("s1", ints({1}))});
  Value *target =
      g.add_op("concat", {lead, g.add_constant("fixed", ints({3, 4}))}, {{"axis", int64_t{0}}});
  g.mark_output(g.add_op("expand", {x, target}, {}, "y"));
  const Graph before = g.clone();
  auto pass = make_fold_symbolic_shapes();
  run_pass(*pass, g);
  EXPECT_EQ(constant_target(g.find_value("y")), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_TRUE(same_outputs(before, g, {random_tensor({5, 1, 4}, 7)}));
}

// CLIP's positions: a [1, 77] table sliced to the sequence length. For every multiple of 32
// above 77 the slice is [1, 77], below it [1, seq]: neither a fixed dim nor a no-op slice.
TEST(CleanupFoldSymbolicShapes, BoundedSliceStaysASlice) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, kUnknownDim});
  g.set_dim_names(x, {"batch", "seq"});
  Value *seq = g.add_op("gather", {g.add_op("shape", {x}), g.add_constant("one", ints({1}))},
                        {{"axis", int64_t{0}}});
  Value *positions =
      g.add_op("slice",
               {g.add_constant("table", Tensor::randn({1, 77}, 8)),
                g.add_constant("zero", ints({0})), seq, g.add_constant("axis", ints({1}))},
               {}, "positions");
  g.mark_output(g.add_op("add", {x, positions}, {}, "y"));
  g.infer_symbolic_shapes();
  const Graph before = g.clone();
  g.optimize(1);
  EXPECT_EQ(count(g, "slice"), 1);
  for (const Shape &shape : {Shape{2, 16}, Shape{1, 77}})
    EXPECT_TRUE(same_outputs(before, g, {random_tensor(shape, 9)})) << shape.to_string();
}

// A graph without symbolic dims is not probed (constant folding handles its shape arithmetic).
TEST(CleanupFoldSymbolicShapes, StaticGraphUnchanged) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  g.mark_output(g.add_op("reshape", {x, g.add_op("shape", {x})}));
  auto pass = make_fold_symbolic_shapes();
  run_pass(*pass, g, false);
}

}  // namespace
}  // namespace lumen::testing
