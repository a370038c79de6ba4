// The pattern passes: fuse_elementwise_chain, the recognizers (gelu, swish, layer_norm, rotary,
// attention) and the attention layouts (attention_heads_in_place, merge_qkv_projections). Each
// positive case checks the rewrite, its note and that the optimized graph computes what the
// original did; each negative case checks that a near-miss is left alone.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "pass_test_util.h"

namespace lumen::testing {
namespace {

Value *scalar(Graph &g, float v, const Shape &shape = Shape{}) {
  return g.add_constant(
      g.fresh_name("c"),
      Tensor::from_vector<float>(shape, std::vector<float>(size_t(shape.numel()), v)));
}

Value *ints(Graph &g, std::vector<int64_t> values) {
  const auto n = int64_t(values.size());
  return g.add_constant(g.fresh_name("axes"), Tensor::from_vector<int64_t>({n}, values));
}

bool contains(const std::vector<std::string> &notes, const std::string &needle) {
  for (const auto &n : notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}

// --- fuse_elementwise_chain ----------------------------------------------------------------------

TEST(FuseElementwiseChain, FusesAChainWithScalarAndFullOperands) {
  Graph g;
  Value *x = g.add_input("x", {4, 300});
  Value *bias = g.add_input("bias", {4, 300});
  Value *a = g.add_op("mul", {x, scalar(g, 1.5f)}, {}, "a");
  Value *b = g.add_op("add", {a, bias}, {}, "b");
  Value *c = g.add_op("relu", {b}, {}, "c");
  Value *d = g.add_op("sub", {scalar(g, 1.0f, {1}), c}, {}, "d");  // running value on the right
  g.mark_output(d);
  const Graph original = g.clone();

  auto pass = make_fuse_elementwise_chain();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(
      notes[0].find("fused 4 nodes (mul 'a', add 'b', relu 'c', sub 'd') -> fused_elementwise"),
      std::string::npos)
      << notes[0];
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"fused_elementwise", 1}}));
  EXPECT_EQ(g.outputs()[0]->name(), "d");
  const Node *fused = g.outputs()[0]->producer();
  EXPECT_EQ(fused->input(0), x);
  EXPECT_EQ(fused->attrs().get_ints("running_right", {}), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({4, 300}, 1), random_tensor({4, 300}, 2)}));
}

TEST(FuseElementwiseChain, ScalarOnTheLeftOfTheFirstStepMakesXTheMainInput) {
  Graph g;
  Value *x = g.add_input("x", {2, 5}, DType::Float64);
  Value *two = g.add_constant("two", Tensor::from_vector<double>({}, {2.0}));
  Value *a = g.add_op("div", {two, x});
  g.mark_output(g.add_op("exp", {a}));
  const Graph original = g.clone();
  auto pass = make_fuse_elementwise_chain();
  run_pass(*pass, g);
  const Node *fused = g.outputs()[0]->producer();
  ASSERT_EQ(fused->op(), "fused_elementwise");
  EXPECT_EQ(fused->input(0), x);
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({2, 5}, 3, 0.5, 2, DType::Float64)}));
}

TEST(FuseElementwiseChain, StopsAtAnIntermediateWithASecondUser) {
  Graph g;
  Value *x = g.add_input("x", {8, 16});
  Value *a = g.add_op("relu", {x}, {}, "a");
  Value *b = g.add_op("sigmoid", {a}, {}, "b");
  Value *c = g.add_op("tanh", {b}, {}, "c");
  g.mark_output(c);
  g.mark_output(g.add_op("add", {a, x}, {}, "other_user"));
  const Graph original = g.clone();
  auto pass = make_fuse_elementwise_chain();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("fused 2 nodes (sigmoid 'b', tanh 'c')"), std::string::npos) << notes[0];
  EXPECT_EQ(op_counts(g),
            (std::map<std::string, int>{{"relu", 1}, {"add", 1}, {"fused_elementwise", 1}}));
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({8, 16}, 4)}));
}

TEST(FuseElementwiseChain, StopsAtAnOperandThatBroadcasts) {
  Graph g;
  Value *x = g.add_input("x", {4, 8});
  Value *a = g.add_op("relu", {x}, {}, "a");
  Value *b = g.add_op("add", {a, g.add_weight("row_bias", {8})}, {}, "b");  // [8] into [4, 8]
  Value *c = g.add_op("exp", {b}, {}, "c");
  g.mark_output(g.add_op("neg", {c}, {}, "d"));
  const Graph original = g.clone();
  auto pass = make_fuse_elementwise_chain();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("fused 2 nodes (exp 'c', neg 'd')"), std::string::npos) << notes[0];
  EXPECT_EQ(op_counts(g),
            (std::map<std::string, int>{{"relu", 1}, {"add", 1}, {"fused_elementwise", 1}}));
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({4, 8}, 5)}));
}

// Shapes known only at run time fuse when they are the same for every size of the symbolic dims:
// the same named dims. A dim named differently ("other") might broadcast: that add stays.
TEST(FuseElementwiseChain, FusesOnSymbolicShapes) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, kUnknownDim, 8});
  Value *bias = g.add_input("bias", {kUnknownDim, kUnknownDim, 8});
  Value *y = g.add_input("y", {kUnknownDim, kUnknownDim, 8});
  g.set_dim_names(x, {"batch", "seq", ""});
  g.set_dim_names(bias, {"batch", "seq", ""});
  g.set_dim_names(y, {"batch", "other", ""});
  Value *a = g.add_op("mul", {x, scalar(g, 1.5f)}, {}, "a");
  Value *b = g.add_op("add", {a, bias}, {}, "b");
  Value *c = g.add_op("tanh", {b}, {}, "c");
  g.mark_output(g.add_op("add", {c, y}, {}, "d"));
  g.infer_symbolic_shapes();
  const Graph original = g.clone();
  auto pass = make_fuse_elementwise_chain();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("fused 3 nodes (mul 'a', add 'b', tanh 'c')"), std::string::npos)
      << notes[0];
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"fused_elementwise", 1}, {"add", 1}}));
  for (const Shape &shape : {Shape{2, 3, 8}, Shape{1, 7, 8}})
    EXPECT_TRUE(same_outputs(
        original, g, {random_tensor(shape, 1), random_tensor(shape, 2), random_tensor(shape, 3)}))
        << shape.to_string();
}

TEST(FuseElementwiseChain, LeavesLoneStepsBroadcastsAndIntegersAlone) {
  Graph g;
  Value *x = g.add_input("x", {4, 1});
  Value *y = g.add_input("y", {1, 5});
  Value *sum = g.add_op("add", {x, y});  // broadcasts both ways: not a step
  g.mark_output(g.add_op("relu", {sum}));
  Value *i = g.add_input("i", {6}, DType::Int32);
  g.mark_output(g.add_op("relu", {g.add_op("neg", {i})}));  // integers: not fused
  auto pass = make_fuse_elementwise_chain();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"add", 1}, {"relu", 2}, {"neg", 1}}));
}

TEST(FuseElementwiseChain, TwoChainsMeetingInABinaryStep) {
  Graph g;
  Value *x = g.add_input("x", {3, 10});
  Value *y = g.add_input("y", {3, 10});
  Value *left = g.add_op("sigmoid", {g.add_op("relu", {x}, {}, "r")}, {}, "s");
  Value *right = g.add_op("exp", {g.add_op("tanh", {y}, {}, "t")}, {}, "e");
  g.mark_output(g.add_op("neg", {g.add_op("sub", {left, right}, {}, "diff")}, {}, "n"));
  const Graph original = g.clone();
  auto pass = make_fuse_elementwise_chain();
  const auto notes = run_pass(*pass, g);
  EXPECT_EQ(notes.size(), 2u);
  EXPECT_TRUE(contains(notes, "fused 4 nodes (relu 'r', sigmoid 's', sub 'diff', neg 'n')"));
  EXPECT_TRUE(contains(notes, "fused 2 nodes (tanh 't', exp 'e')"));
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"fused_elementwise", 2}}));
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({3, 10}, 6), random_tensor({3, 10}, 7)}));
}

// --- recognize_swish -----------------------------------------------------------------------------

// x * sigmoid(x) and x * hard_sigmoid(x) (alpha 1/6) in both operand orders become silu and
// hard_swish; the pipeline then fuses them into the conv before them (the written-out form
// cannot: the conv's output has two users).
TEST(RecognizeSwish, GateTimesInputInEitherOrderFusesIntoTheConv) {
  struct Case {
    std::string gate;
    Attributes attrs;
    std::string op;
  };
  const Attributes torch_hard{{"alpha", 1.0 / 6}, {"beta", 0.5}};
  for (const Case &c :
       {Case{"sigmoid", {}, "silu"}, Case{"hard_sigmoid", torch_hard, "hard_swish"}})
    for (bool gate_first : {false, true}) {
      SCOPED_TRACE(c.gate + (gate_first ? " gate first" : " x first"));
      Graph g;
      Value *x = g.add_input("x", {2, 3, 9, 9});
      Value *w = g.add_constant("w", random_tensor({6, 3, 3, 3}, 5));
      Value *b = g.add_constant("b", random_tensor({6}, 6, 0.5, 1.5));
      Value *conv = g.add_op("conv2d", {x, w, b}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
      Value *gate = g.add_op(c.gate, {conv}, c.attrs, "gate");
      g.mark_output(
          g.add_op("mul", gate_first ? std::vector{gate, conv} : std::vector{conv, gate}, {}, "y"));
      const Graph original = g.clone();
      Graph recognized = g.clone();
      const auto notes = run_pass(*make_recognize_swish(), recognized);
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_TRUE(contains(notes, "recognized " + c.op)) << notes[0];
      EXPECT_EQ(op_counts(recognized), (std::map<std::string, int>{{"conv2d", 1}, {c.op, 1}}));
      EXPECT_EQ(recognized.outputs()[0]->name(), "y");
      const std::vector<Tensor> inputs = {random_tensor({2, 3, 9, 9}, 7, -3, 3)};
      EXPECT_TRUE(same_outputs(original, recognized, inputs, 1e-5, 1e-5, "reference"));
      g.optimize(2);
      EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"fused_conv", 1}}));
      EXPECT_TRUE(same_outputs(original, g, inputs, 1e-4, 1e-4));
    }
}

TEST(RecognizeSwish, LeavesNearMissesAlone) {
  // The gate read by another node, a gate on another value, ONNX's default hard_sigmoid (0.2).
  Graph g;
  Value *x = g.add_input("x", {4, 8});
  Value *y = g.add_input("y", {4, 8});
  Value *s = g.add_op("sigmoid", {x});
  g.mark_output(g.add_op("mul", {x, s}));
  g.mark_output(g.add_op("add", {s, y}));
  g.mark_output(g.add_op("mul", {y, g.add_op("sigmoid", {x})}));
  g.mark_output(g.add_op("mul", {x, g.add_op("hard_sigmoid", {x})}));
  run_pass(*make_recognize_swish(), g, false);
}

// --- recognize_gelu ------------------------------------------------------------------------------

enum class Grouping { XTimesAThenHalf, HalfXThenTimesA, AHalfThenTimesX };

// x * 0.5 * (1 + erf(x / sqrt(2))) in the given grouping; `scale_by_mul` writes x * (1/sqrt(2)).
Value *erf_gelu(Graph &g, Value *x, Grouping grouping, bool scale_by_mul, float half = 0.5f,
                float sqrt2 = 1.4142135f, const std::string &prefix = "") {
  Value *scaled = scale_by_mul ? g.add_op("mul", {scalar(g, 0.70710678f), x}, {}, prefix + "scale")
                               : g.add_op("div", {x, scalar(g, sqrt2)}, {}, prefix + "scale");
  Value *a = g.add_op("add", {g.add_op("erf", {scaled}, {}, prefix + "erf"), scalar(g, 1.0f)}, {},
                      prefix + "plus1");
  switch (grouping) {
    case Grouping::XTimesAThenHalf:
      return g.add_op("mul", {g.add_op("mul", {x, a}), scalar(g, half)}, {}, prefix + "gelu_out");
    case Grouping::HalfXThenTimesA:
      return g.add_op("mul", {g.add_op("mul", {scalar(g, half), x}), a}, {}, prefix + "gelu_out");
    case Grouping::AHalfThenTimesX:
      return g.add_op("mul", {x, g.add_op("mul", {a, scalar(g, half)})}, {}, prefix + "gelu_out");
  }
  return nullptr;
}

TEST(RecognizeGelu, ExactErfFormInEveryOrdering) {
  for (Grouping grouping :
       {Grouping::XTimesAThenHalf, Grouping::HalfXThenTimesA, Grouping::AHalfThenTimesX}) {
    for (bool scale_by_mul : {false, true}) {
      SCOPED_TRACE(str("grouping ", int(grouping), ", scale_by_mul ", scale_by_mul));
      Graph g;
      Value *x = g.add_input("x", {3, 50});
      g.mark_output(erf_gelu(g, x, grouping, scale_by_mul));
      const Graph original = g.clone();
      auto pass = make_recognize_gelu();
      const auto notes = run_pass(*pass, g);
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find("erf 'erf'"), std::string::npos) << notes[0];
      EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"gelu", 1}}));
      EXPECT_EQ(g.outputs()[0]->name(), "gelu_out");
      EXPECT_EQ(g.outputs()[0]->producer()->attrs().get_string("approximate", ""), "none");
      EXPECT_TRUE(same_outputs(original, g, {random_tensor({3, 50}, 8, -4, 4)}));
    }
  }
}

// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
Value *tanh_gelu(Graph &g, Value *x, bool use_pow, float k = 0.7978845608f) {
  Value *cube = use_pow ? g.add_op("pow", {x, scalar(g, 3.0f)})
                        : g.add_op("mul", {x, g.add_op("mul", {x, x})});
  Value *inner = g.add_op("add", {g.add_op("mul", {scalar(g, 0.044715f), cube}), x});
  Value *t = g.add_op("tanh", {g.add_op("mul", {inner, scalar(g, k)})}, {}, "tanh");
  Value *a = g.add_op("add", {scalar(g, 1.0f), t});
  return g.add_op("mul", {g.add_op("mul", {x, scalar(g, 0.5f)}), a}, {}, "gelu_out");
}

TEST(RecognizeGelu, TanhApproximationWithPowOrProducts) {
  for (bool use_pow : {true, false}) {
    SCOPED_TRACE(use_pow ? "pow" : "x*x*x");
    Graph g;
    Value *x = g.add_input("x", {4, 40});
    g.mark_output(tanh_gelu(g, x, use_pow));
    const Graph original = g.clone();
    auto pass = make_recognize_gelu();
    const auto notes = run_pass(*pass, g);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("tanh gelu"), std::string::npos) << notes[0];
    EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"gelu", 1}}));
    EXPECT_EQ(g.outputs()[0]->producer()->attrs().get_string("approximate", ""), "tanh");
    EXPECT_TRUE(same_outputs(original, g, {random_tensor({4, 40}, 9, -4, 4)}));
  }
}

// A dynamic model's x of unknown shape (a reshape to a shape computed at run time): recognized
// when every constant is of rank 0, so nothing can broadcast x to another shape; a [1]-shaped
// constant could, and keeps the pattern.
TEST(RecognizeGelu, UnknownShapeWithScalarConstants) {
  for (bool rank0 : {true, false}) {
    SCOPED_TRACE(rank0 ? "rank-0 constants" : "a [1]-shaped constant");
    Graph g;
    Value *in = g.add_input("in", {4, 40});
    Value *dims = g.add_input("dims", {2}, DType::Int64);
    Value *x = g.add_op("reshape", {in, dims});
    ASSERT_FALSE(x->has_shape() && x->shape().is_static());
    Value *cube = g.add_op("pow", {x, scalar(g, 3.0f, rank0 ? Shape{} : Shape{1})});
    Value *inner = g.add_op("add", {g.add_op("mul", {scalar(g, 0.044715f), cube}), x});
    Value *t = g.add_op("tanh", {g.add_op("mul", {inner, scalar(g, 0.7978845608f)})});
    Value *a = g.add_op("add", {scalar(g, 1.0f), t});
    g.mark_output(g.add_op("mul", {g.add_op("mul", {x, scalar(g, 0.5f)}), a}));
    auto pass = make_recognize_gelu();
    run_pass(*pass, g, /*changed=*/rank0);
    EXPECT_EQ(op_counts(g).count("gelu"), rank0 ? 1u : 0u);
  }
}

TEST(RecognizeGelu, TwoGelusInARowBothRecognized) {
  Graph g;
  Value *x = g.add_input("x", {2, 8});
  Value *first = erf_gelu(g, x, Grouping::XTimesAThenHalf, false, 0.5f, 1.4142135f, "g1_");
  g.mark_output(erf_gelu(g, first, Grouping::HalfXThenTimesA, true, 0.5f, 1.4142135f, "g2_"));
  const Graph original = g.clone();
  auto pass = make_recognize_gelu();
  EXPECT_EQ(run_pass(*pass, g).size(), 2u);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"gelu", 2}}));
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({2, 8}, 10, -3, 3)}));
}

TEST(RecognizeGelu, WrongConstantsAreNotGelu) {
  auto unchanged = [](auto build) {
    Graph g;
    Value *x = g.add_input("x", {3, 5});
    g.mark_output(build(g, x));
    auto pass = make_recognize_gelu();
    run_pass(*pass, g, /*changed=*/false);
    EXPECT_EQ(op_counts(g).count("gelu"), 0u);
  };
  unchanged([](Graph &g, Value *x) {
    return erf_gelu(g, x, Grouping::XTimesAThenHalf, false, /*half=*/0.6f);
  });
  unchanged([](Graph &g, Value *x) {
    return erf_gelu(g, x, Grouping::HalfXThenTimesA, false, 0.5f, /*sqrt2=*/1.5f);
  });
  // Within 1e-4 relative is still accepted, so just past it must not be.
  unchanged([](Graph &g, Value *x) {
    return erf_gelu(g, x, Grouping::AHalfThenTimesX, false, 0.5f, 1.4142135f * 1.0002f);
  });
  unchanged([](Graph &g, Value *x) { return tanh_gelu(g, x, true, /*k=*/0.75f); });
}

TEST(RecognizeGelu, IntermediateWithAnotherUserIsKept) {
  Graph g;
  Value *x = g.add_input("x", {3, 5});
  g.mark_output(erf_gelu(g, x, Grouping::XTimesAThenHalf, false));
  g.mark_output(g.find_value("erf"));  // the erf output is needed on its own
  auto pass = make_recognize_gelu();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(op_counts(g).count("gelu"), 0u);
}

// --- recognize_layer_norm ------------------------------------------------------------------------

struct LayerNormOptions {
  std::vector<int64_t> axes = {-1};
  bool axes_as_input = false;
  bool square_by_pow = false;
  enum { Div, Reciprocal, OneOver } normalize = Div;
  bool gamma = true;
  bool beta = true;
};

Value *layer_norm_by_hand(Graph &g, Value *x, const LayerNormOptions &o) {
  auto mean_of = [&](Value *v, const std::string &name) {
    if (o.axes_as_input) return g.add_op("reduce_mean", {v, ints(g, o.axes)}, {}, name);
    return g.add_op("reduce_mean", {v}, {{"axes", o.axes}, {"keepdims", int64_t(1)}}, name);
  };
  Value *d = g.add_op("sub", {x, mean_of(x, "mean")}, {}, "d");
  Value *sq = o.square_by_pow ? g.add_op("pow", {d, scalar(g, 2.0f)}) : g.add_op("mul", {d, d});
  Value *std_dev = g.add_op("sqrt", {g.add_op("add", {scalar(g, 1e-5f), mean_of(sq, "var")})});
  Value *y = nullptr;
  switch (o.normalize) {
    case LayerNormOptions::Div:
      y = g.add_op("div", {d, std_dev}, {}, "normalized");
      break;
    case LayerNormOptions::Reciprocal:
      y = g.add_op("mul", {d, g.add_op("reciprocal", {std_dev})}, {}, "normalized");
      break;
    case LayerNormOptions::OneOver:
      y = g.add_op("mul", {g.add_op("div", {scalar(g, 1.0f), std_dev}), d}, {}, "normalized");
      break;
  }
  const int64_t last = x->shape()[x->shape().rank() - 1];
  if (o.gamma) y = g.add_op("mul", {g.add_weight("gamma", {last}), y}, {}, "scaled");
  if (o.beta) y = g.add_op("add", {y, g.add_weight("beta", {last})}, {}, "shifted");
  return y;
}

void expect_layer_norm(const LayerNormOptions &o, const Shape &shape, int64_t axis) {
  Graph g;
  Value *x = g.add_input("x", shape);
  g.mark_output(layer_norm_by_hand(g, x, o));
  const Graph original = g.clone();
  auto pass = make_recognize_layer_norm();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("reduce_mean 'mean', sub 'd'"), std::string::npos) << notes[0];
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"layer_norm", 1}}));
  const Node *ln = g.outputs()[0]->producer();
  EXPECT_EQ(ln->attrs().get_int("axis", -100), axis);
  EXPECT_NEAR(ln->attrs().get_float("epsilon", 0), 1e-5, 1e-9);
  EXPECT_EQ(ln->inputs().size(), o.beta ? 3u : 2u);
  EXPECT_TRUE(same_outputs(original, g, {random_tensor(shape, 11, -3, 3)}, 1e-4, 1e-5));
}

TEST(RecognizeLayerNorm, LastAxisWithGammaAndBeta) {
  expect_layer_norm({}, {2, 5, 16}, 2);
}

TEST(RecognizeLayerNorm, LastTwoAxesGivenAsInputWithPowAndReciprocal) {
  expect_layer_norm({.axes = {1, 2},
                     .axes_as_input = true,
                     .square_by_pow = true,
                     .normalize = LayerNormOptions::Reciprocal,
                     .gamma = false,
                     .beta = false},
                    {3, 4, 6}, 1);
}

TEST(RecognizeLayerNorm, OneOverStdWithGammaOnly) {
  expect_layer_norm({.normalize = LayerNormOptions::OneOver, .beta = false}, {7, 12}, 1);
}

TEST(RecognizeLayerNorm, BetaWithoutGammaGetsAScaleOfOnes) {
  expect_layer_norm({.axes = {-2, -1}, .gamma = false}, {2, 3, 8}, 1);
}

// LLaMA's RMSNorm as torch exports it: pow(x, 2) -> mean -> + eps -> sqrt -> 1 / std -> x * inv ->
// weight * y, with x also read by the residual add.
TEST(RecognizeLayerNorm, RmsNormWithResidualUser) {
  Graph g;
  Value *x = g.add_input("x", {2, 5, 16});
  Value *square = g.add_op("pow", {x, scalar(g, 2.0f)}, {}, "square");
  Value *ms = g.add_op("reduce_mean", {square}, {{"axes", std::vector<int64_t>{-1}}}, "ms");
  Value *std_dev = g.add_op("sqrt", {g.add_op("add", {ms, scalar(g, 1e-6f)})});
  Value *inv = g.add_op("div", {scalar(g, 1.0f), std_dev});
  Value *y = g.add_op("mul", {g.add_weight("weight", {16}), g.add_op("mul", {x, inv})});
  g.mark_output(g.add_op("add", {y, x}, {}, "residual"));
  const Graph original = g.clone();
  auto pass = make_recognize_layer_norm();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("recognized RMS norm over axis 2"), std::string::npos) << notes[0];
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"rms_norm", 1}, {"add", 1}}));
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({2, 5, 16}, 12, -3, 3)}, 1e-4, 1e-5));
}

TEST(RecognizeLayerNorm, NonLastAxisIsLeftAlone) {
  Graph g;
  Value *x = g.add_input("x", {2, 5, 16});
  g.mark_output(layer_norm_by_hand(g, x, {.axes = {1}, .gamma = false, .beta = false}));
  auto pass = make_recognize_layer_norm();
  run_pass(*pass, g, /*changed=*/false);
  EXPECT_EQ(op_counts(g).count("layer_norm"), 0u);
}

// Not a layer norm; what follows the centering is still an RMS norm of the centered value.
TEST(RecognizeLayerNorm, CenteredValueWithAnotherUserIsOnlyAnRmsNorm) {
  Graph g;
  Value *x = g.add_input("x", {2, 16});
  g.mark_output(layer_norm_by_hand(g, x, {}));
  g.mark_output(g.add_op("relu", {g.find_value("d")}));
  const Graph original = g.clone();
  auto pass = make_recognize_layer_norm();
  run_pass(*pass, g);
  EXPECT_EQ(op_counts(g).count("layer_norm"), 0u);
  EXPECT_EQ(op_counts(g).count("rms_norm"), 1u);
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({2, 16}, 13, -3, 3)}, 1e-4, 1e-5));
}

TEST(RecognizeLayerNorm, DifferentAxesForMeanAndVarianceAreNoLayerNorm) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 4});
  Value *mean = g.add_op("reduce_mean", {x}, {{"axes", std::vector<int64_t>{-1}}});
  Value *d = g.add_op("sub", {x, mean});
  Value *var =
      g.add_op("reduce_mean", {g.add_op("mul", {d, d})}, {{"axes", std::vector<int64_t>{-2, -1}}});
  Value *std_dev = g.add_op("sqrt", {g.add_op("add", {var, scalar(g, 1e-5f)})});
  g.mark_output(g.add_op("div", {d, std_dev}));
  const Graph original = g.clone();
  auto pass = make_recognize_layer_norm();
  run_pass(*pass, g);  // the tail: an RMS norm of d over the last two axes
  EXPECT_EQ(op_counts(g).count("layer_norm"), 0u);
  EXPECT_EQ(op_counts(g).count("rms_norm"), 1u);
  EXPECT_TRUE(same_outputs(original, g, {random_tensor({2, 3, 4}, 14, -3, 3)}, 1e-4, 1e-5));
}

// --- the pipeline --------------------------------------------------------------------------------

TEST(PatternPipeline, DecomposedLayerNormAndGeluBecomeOpsThenTheTailFuses) {
  // layer norm by hand -> gelu by hand -> * 2 -> + 1, all decomposed as an exporter writes them.
  Graph g;
  Value *x = g.add_input("x", {2, 6, 32});
  Value *normalized = layer_norm_by_hand(g, x, {});
  Value *act = erf_gelu(g, normalized, Grouping::HalfXThenTimesA, false);
  Value *tail = g.add_op("add", {g.add_op("mul", {act, scalar(g, 2.0f)}), scalar(g, 1.0f)});
  g.mark_output(tail);
  const std::string output_name = tail->name();
  Graph optimized = g.clone();
  const OptimizeReport report = optimized.optimize(2);
  EXPECT_EQ(op_counts(optimized),
            (std::map<std::string, int>{{"layer_norm", 1}, {"fused_elementwise", 1}}))
      << report.to_string();
  const Node *fused = optimized.outputs()[0]->producer();
  ASSERT_EQ(fused->op(), "fused_elementwise");
  EXPECT_EQ(std::get<std::vector<std::string>>(fused->attrs().items().at("ops")),
            (std::vector<std::string>{"gelu", "mul", "add"}));
  EXPECT_EQ(optimized.outputs()[0]->name(), output_name);
  EXPECT_TRUE(same_outputs(g, optimized, {random_tensor({2, 6, 32}, 12, -3, 3)}, 1e-4, 1e-5));
}

// --- recognize_attention -------------------------------------------------------------------------

Value *int_constant(Graph &g, std::vector<int64_t> values) {
  const auto n = int64_t(values.size());
  return g.add_constant(g.fresh_name("shape"), Tensor::from_vector<int64_t>({n}, values));
}

// A LLaMA decoder's attention as torch exports it: sqrt(scale) on Q and on K^T, an additive mask,
// the is_nan guard, and two query heads per KV head through repeat_kv.
TEST(RecognizeAttention, GroupedHeadsWithMaskAndNanGuard) {
  Graph g;
  Value *q = g.add_input("q", {1, 4, 3, 8});
  Value *k = g.add_input("k", {1, 2, 5, 8});
  Value *v = g.add_input("v", {1, 2, 5, 8});
  Value *mask = g.add_input("mask", {1, 1, 3, 5});
  auto repeat_kv = [&](Value *x) {
    Value *u = g.add_op("unsqueeze", {x, int_constant(g, {2})});
    Value *e = g.add_op("expand", {u, int_constant(g, {1, 2, 2, 5, 8})});
    return g.add_op("reshape", {e, int_constant(g, {1, 4, 5, 8})});
  };
  Value *kt = g.add_op("transpose", {repeat_kv(k)}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  const float root = std::pow(8.0f, -0.25f);
  Value *scores = g.add_op(
      "matmul", {g.add_op("mul", {q, scalar(g, root)}), g.add_op("mul", {kt, scalar(g, root)})});
  Value *probs = g.add_op("softmax", {g.add_op("add", {scores, mask})}, {{"axis", int64_t{-1}}});
  Value *guarded = g.add_op("where", {g.add_op("is_nan", {probs}), scalar(g, 0.0f), probs});
  g.mark_output(g.add_op("matmul", {guarded, repeat_kv(v)}, {}, "y"));
  const Graph original = g.clone();
  auto pass = make_recognize_attention();
  const auto notes = run_pass(*pass, g);
  ASSERT_EQ(notes.size(), 1u);
  const Node *attention = g.outputs()[0]->producer();
  ASSERT_EQ(attention->op(), "attention");
  EXPECT_EQ(attention->input(1), k);  // the shared KV heads, read in place
  EXPECT_EQ(attention->input(2), v);
  EXPECT_NEAR(attention->attrs().get_float("scale", 0), 1 / std::sqrt(8.0), 1e-6);
  EXPECT_EQ(op_counts(g).count("softmax"), 0u);
  EXPECT_TRUE(
      same_outputs(original, g,
                   {random_tensor({1, 4, 3, 8}, 1, -2, 2), random_tensor({1, 2, 5, 8}, 2, -2, 2),
                    random_tensor({1, 2, 5, 8}, 3), random_tensor({1, 1, 3, 5}, 4, -3, 0)},
                   1e-4, 1e-5));
}

// BERT's: K^T made by one transpose from [B, S, H, D], the scale divided out of the scores, no
// mask; a mask whose key dim broadcasts (1) would be padded by attention, so it is left alone.
TEST(RecognizeAttention, TransposedKeysAndBroadcastKeyMask) {
  for (bool broadcast_mask : {false, true}) {
    Graph g;
    Value *q = g.add_input("q", {2, 3, 4, 8});
    Value *k = g.add_input("k", {2, 4, 3, 8});  // [B, S, H, D]
    Value *v = g.add_input("v", {2, 3, 4, 8});
    Value *kt = g.add_op("transpose", {k}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    Value *scores = g.add_op("div", {g.add_op("matmul", {q, kt}), scalar(g, std::sqrt(8.0f))});
    if (broadcast_mask) scores = g.add_op("add", {scores, g.add_weight("bias", {4, 1})});
    Value *probs = g.add_op("softmax", {scores}, {{"axis", int64_t{3}}});
    g.mark_output(g.add_op("matmul", {probs, v}));
    const Graph original = g.clone();
    auto pass = make_recognize_attention();
    run_pass(*pass, g, !broadcast_mask);
    EXPECT_EQ(op_counts(g).count("attention"), broadcast_mask ? 0u : 1u);
    EXPECT_TRUE(same_outputs(original, g,
                             {random_tensor({2, 3, 4, 8}, 5), random_tensor({2, 4, 3, 8}, 6),
                              random_tensor({2, 3, 4, 8}, 7)},
                             1e-4, 1e-5));
  }
}

// --- recognize_rotary ----------------------------------------------------------------------------

// x * cos + rotate_half(x) * sin as torch exports it, in the operand orders and slice forms
// exporters write; cos and sin of [S, D] or [B, 1, S, D]. A split that is not at D/2, or a cos
// that would grow x, is no rotary embedding and stays.
TEST(RecognizeRotary, RotateHalfFormsBecomeOneNode) {
  struct Case {
    bool swap_add, swap_mul, rank2_cache, int_max_end;
    int64_t split;
    bool recognized;
  };
  for (const Case c :
       {Case{false, false, false, false, 4, true}, Case{true, true, true, true, 4, true},
        Case{false, true, false, true, 4, true}, Case{false, false, false, false, 3, false}}) {
    Graph g;
    Value *x = g.add_input("x", {2, 3, 5, 8});
    const Shape cache = c.rank2_cache ? Shape{5, 8} : Shape{2, 1, 5, 8};
    Value *cos = g.add_input("cos", cache), *sin = g.add_input("sin", cache);
    auto slice = [&](int64_t begin, int64_t end) {
      return g.add_op("slice", {x, int_constant(g, {begin}), int_constant(g, {end}),
                                int_constant(g, {c.int_max_end ? 3 : -1})});
    };
    const int64_t big = c.int_max_end ? std::numeric_limits<int64_t>::max() : 8;
    Value *rotated = g.add_op("concat", {g.add_op("neg", {slice(c.split, big)}), slice(0, c.split)},
                              {{"axis", int64_t{-1}}});
    Value *direct = c.swap_mul ? g.add_op("mul", {cos, x}) : g.add_op("mul", {x, cos});
    Value *turned = c.swap_mul ? g.add_op("mul", {sin, rotated}) : g.add_op("mul", {rotated, sin});
    g.mark_output(c.swap_add ? g.add_op("add", {turned, direct}, {}, "y")
                             : g.add_op("add", {direct, turned}, {}, "y"));
    const Graph original = g.clone();
    auto pass = make_recognize_rotary();
    run_pass(*pass, g, c.recognized);
    EXPECT_EQ(op_counts(g),
              c.recognized ? (std::map<std::string, int>{{"rotate_half_mix", 1}})
                           : (std::map<std::string, int>{
                                 {"add", 1}, {"concat", 1}, {"mul", 2}, {"neg", 1}, {"slice", 2}}));
    const std::vector<Tensor> inputs{random_tensor({2, 3, 5, 8}, 20, -2, 2),
                                     random_tensor(cache, 21, -1, 1),
                                     random_tensor(cache, 22, -1, 1)};
    EXPECT_TRUE(same_outputs(original, g, inputs, 1e-5, 1e-6));
    EXPECT_TRUE(same_outputs(original, g, inputs, 1e-5, 1e-6, "reference"));
  }
  // cos [2, 3, 5, 8] on x [1, 3, 5, 8]: the mul broadcasts x up, the output is not x's shape.
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 8});
  Value *cos = g.add_input("cos", {2, 3, 5, 8}), *sin = g.add_input("sin", {2, 3, 5, 8});
  auto half = [&](int64_t b, int64_t e) {
    return g.add_op("slice",
                    {x, int_constant(g, {b}), int_constant(g, {e}), int_constant(g, {-1})});
  };
  Value *rotated =
      g.add_op("concat", {g.add_op("neg", {half(4, 8)}), half(0, 4)}, {{"axis", int64_t{-1}}});
  g.mark_output(g.add_op("add", {g.add_op("mul", {x, cos}), g.add_op("mul", {rotated, sin})}));
  auto pass = make_recognize_rotary();
  run_pass(*pass, g, /*changed=*/false);
}

// --- attention_heads_in_place --------------------------------------------------------------------

// BERT's attention as torch exports it, heads split from and merged back to [B, S, H * D]: after
// recognize_attention, attention reads Q, K and V and writes its output in that layout, and the
// head transposes go. Left alone when the output is used with its heads split.
TEST(AttentionHeadsInPlace, BertHeadSplitAndMergeGo) {
  for (bool merged_output : {true, false}) {
    Graph g;
    Value *xq = g.add_input("xq", {2, 5, 16});
    Value *xk = g.add_input("xk", {2, 5, 16});
    Value *xv = g.add_input("xv", {2, 5, 16});
    auto split = [&](Value *x, std::vector<int64_t> perm) {
      Value *r = g.add_op("reshape", {x, int_constant(g, {2, 5, 2, 8})});
      return g.add_op("transpose", {r}, {{"perm", perm}});
    };
    Value *scores =
        g.add_op("div", {g.add_op("matmul", {split(xq, {0, 2, 1, 3}), split(xk, {0, 2, 3, 1})}),
                         scalar(g, std::sqrt(8.0f))});
    Value *probs = g.add_op("softmax", {scores}, {{"axis", int64_t{-1}}});
    Value *y = g.add_op("matmul", {probs, split(xv, {0, 2, 1, 3})});
    if (merged_output) {
      Value *t = g.add_op("transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
      y = g.add_op("reshape", {t, int_constant(g, {2, 5, 16})});
    }
    g.mark_output(y);
    const Graph original = g.clone();
    run_pass(*make_recognize_attention(), g);
    run_pass(*make_attention_heads_in_place(), g, merged_output);
    PassContext dce;
    make_dead_code_elimination()->run(g, dce);
    const Node *attention = g.outputs()[0]->producer();
    if (merged_output) {
      ASSERT_EQ(attention->op(), "attention");
      EXPECT_EQ(attention->attrs().get_int("q_num_heads", 0), 2);
      EXPECT_EQ(attention->attrs().get_int("kv_num_heads", 0), 2);
      EXPECT_EQ(attention->input(0), xq);
      EXPECT_EQ(attention->input(1), xk);
      EXPECT_EQ(attention->input(2), xv);
      EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"attention", 1}}));
    } else {
      EXPECT_FALSE(attention->attrs().has("q_num_heads"));
    }
    EXPECT_TRUE(same_outputs(original, g,
                             {random_tensor({2, 5, 16}, 8, -2, 2),
                              random_tensor({2, 5, 16}, 9, -2, 2), random_tensor({2, 5, 16}, 10)},
                             1e-4, 1e-5));
  }
}

// --- merge_qkv_projections -----------------------------------------------------------------------

// A rank-3 attention (4 query heads, 2 key/value heads of size 4) on Q, K and V made by `project`
// from one input x [2, 5, 8], with an additive mask.
Graph qkv_graph(const std::function<std::vector<Value *>(Graph &, Value *)> &project) {
  Graph g;
  Value *x = g.add_input("x", {2, 5, 8});
  Value *mask = g.add_input("mask", {5, 5});
  const std::vector<Value *> qkv = project(g, x);
  g.mark_output(g.add_node("attention", {qkv[0], qkv[1], qkv[2], mask},
                           {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}})
                    ->output(0));
  return g;
}

Value *weights(Graph &g, int64_t n, uint64_t seed) {
  return g.add_constant(g.fresh_name("w"), random_tensor({8, n}, seed));
}

Value *bias(Graph &g, int64_t n, uint64_t seed) {
  return g.add_constant(g.fresh_name("b"), random_tensor({n}, seed, 0.5, 1.5));
}

std::vector<Tensor> qkv_inputs() {
  return {random_tensor({2, 5, 8}, 21, -2, 2), random_tensor({5, 5}, 22)};
}

// Three projections of x as exporters write them: a bias, a scale after the projection (Whisper's
// Q), none at all (Whisper's K). One fused_matmul with the scaled weights side by side remains,
// and attention reads it packed; the same results on the CPU and the reference backends.
TEST(MergeQkvProjections, ThreeProjectionsBecomeOneMatmul) {
  Graph g = qkv_graph([](Graph &g, Value *x) {
    Value *q = g.add_op(
        "mul", {g.add_op("fused_matmul", {x, weights(g, 16, 1), bias(g, 16, 2)}), scalar(g, 0.5f)});
    Value *k = g.add_op("matmul", {x, weights(g, 8, 3)});
    Value *v = g.add_op("fused_matmul", {x, weights(g, 8, 4), bias(g, 8, 5)});
    return std::vector<Value *>{q, k, v};
  });
  const Graph original = g.clone();
  const auto notes = run_pass(*make_merge_qkv_projections(), g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("reads Q, K and V packed [.., 32]: projections mul"), std::string::npos)
      << notes[0];
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"attention", 1}, {"fused_matmul", 1}}));
  const Node *attention = g.outputs()[0]->producer();
  EXPECT_EQ(attention->attrs().get_int("qkv_packed", 0), 1);
  EXPECT_EQ(attention->input(0)->shape(), Shape({2, 5, 32}));
  for (const std::string backend : {"cpu", "reference"})
    EXPECT_TRUE(same_outputs(original, g, qkv_inputs(), 1e-4, 1e-5, backend)) << backend;
}

// T5's form: no biases at all. The merged projection has none either.
TEST(MergeQkvProjections, ProjectionsWithoutBiasesMergeWithoutOne) {
  Graph g = qkv_graph([](Graph &g, Value *x) {
    return std::vector<Value *>{g.add_op("matmul", {x, weights(g, 16, 1)}),
                                g.add_op("matmul", {x, weights(g, 8, 2)}),
                                g.add_op("matmul", {x, weights(g, 8, 3)})};
  });
  const Graph original = g.clone();
  run_pass(*make_merge_qkv_projections(), g);
  const Node *merged = g.outputs()[0]->producer()->input(0)->producer();
  ASSERT_EQ(merged->op(), "fused_matmul");
  EXPECT_EQ(merged->inputs().size(), 2u);
  EXPECT_TRUE(same_outputs(original, g, qkv_inputs(), 1e-4, 1e-5));
}

// GPT-2's form: one projection split into Q, K and V along the last dim. Attention reads the
// projection; the split copies go.
TEST(MergeQkvProjections, SplitProjectionIsReadInPlace) {
  Graph g = qkv_graph([](Graph &g, Value *x) {
    Value *qkv = g.add_op("fused_matmul", {x, weights(g, 32, 6), bias(g, 32, 7)});
    std::vector<Value *> parts;
    for (int64_t i = 0; i < 3; ++i)
      parts.push_back(g.add_op("split", {qkv, int_constant(g, {16, 8, 8})},
                               {{"axis", int64_t{-1}}, {"index", i}}));
    return parts;
  });
  const Graph original = g.clone();
  const auto notes = run_pass(*make_merge_qkv_projections(), g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("packed [.., 32]: split"), std::string::npos) << notes[0];
  PassContext dce;
  make_dead_code_elimination()->run(g, dce);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"attention", 1}, {"fused_matmul", 1}}));
  for (const std::string backend : {"cpu", "reference"})
    EXPECT_TRUE(same_outputs(original, g, qkv_inputs(), 1e-4, 1e-5, backend)) << backend;
}

// Left alone: K and V projected from another input (cross-attention), a projection with an
// activation, a split in another order, and heads of different sizes.
TEST(MergeQkvProjections, OtherFormsAreLeftAlone) {
  const std::vector<std::function<std::vector<Value *>(Graph &, Value *)>> forms{
      [](Graph &g, Value *x) {
        Value *memory = g.add_op("neg", {x});
        return std::vector<Value *>{g.add_op("matmul", {x, weights(g, 16, 1)}),
                                    g.add_op("matmul", {memory, weights(g, 8, 2)}),
                                    g.add_op("matmul", {memory, weights(g, 8, 3)})};
      },
      [](Graph &g, Value *x) {
        return std::vector<Value *>{
            g.add_op("fused_matmul", {x, weights(g, 16, 1)}, {{"activation", std::string("relu")}}),
            g.add_op("matmul", {x, weights(g, 8, 2)}), g.add_op("matmul", {x, weights(g, 8, 3)})};
      },
      [](Graph &g, Value *x) {
        Value *qkv = g.add_op("matmul", {x, weights(g, 32, 4)});
        std::vector<Value *> parts;
        for (int64_t i : {0, 2, 1})
          parts.push_back(g.add_op("split", {qkv, int_constant(g, {16, 8, 8})},
                                   {{"axis", int64_t{2}}, {"index", i}}));
        return parts;
      },
      [](Graph &g, Value *x) {  // V's heads of size 8, K's of size 4
        return std::vector<Value *>{g.add_op("matmul", {x, weights(g, 16, 1)}),
                                    g.add_op("matmul", {x, weights(g, 8, 2)}),
                                    g.add_op("matmul", {x, weights(g, 16, 3)})};
      }};
  for (const auto &form : forms) {
    Graph g = qkv_graph(form);
    run_pass(*make_merge_qkv_projections(), g, /*changed=*/false);
  }
}

}  // namespace
}  // namespace lumen::testing
