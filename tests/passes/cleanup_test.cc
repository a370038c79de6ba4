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

}  // namespace
}  // namespace lumen::testing
