// The fusion passes that create conv2d/gemm/fused_* nodes: fold_conv_batch_norm,
// matmul_add_to_gemm, fuse_residual_add, fuse_bias_activation, fuse_conv_max_pool,
// fuse_pointwise_depthwise. Each positive
// case checks the op counts after one run (run_pass also checks idempotence and verify()) and that
// the optimized graph computes what the original did (float32: rtol/atol 1e-4). Negative cases
// check the pattern does not fire. The pipeline cases (Conv+BN+ReLU, a ResNet basic block, a
// transformer MLP) run Graph::optimize(2) and check the compiled steps.
#include <string>
#include <vector>

#include "pass_test_util.h"

namespace lumen {
namespace {

using testing::op_counts;
using testing::random_tensor;
using testing::run_pass;
using testing::same_outputs;

constexpr double kTol = 1e-4;
using Ints = std::vector<int64_t>;

Value *constant(Graph &g, const std::string &name, const Shape &shape, uint64_t seed,
                double lo = -1, double hi = 1, DType dtype = DType::Float32) {
  return g.add_constant(name, random_tensor(shape, seed, lo, hi, dtype));
}

// batch_norm over `x` with constant, non-trivial parameters for `channels` channels.
Value *batch_norm(Graph &g, Value *x, int64_t channels, const std::string &name,
                  uint64_t seed = 100) {
  Value *scale = constant(g, name + "_scale", {channels}, seed, 0.5, 1.5);
  Value *bias = constant(g, name + "_bias", {channels}, seed + 1);
  Value *mean = constant(g, name + "_mean", {channels}, seed + 2);
  Value *var = constant(g, name + "_var", {channels}, seed + 3, 0.2, 2.0);
  return g.add_op("batch_norm", {x, scale, bias, mean, var}, {{"epsilon", 1e-3}}, name);
}

Attributes pads1() {
  return {{"pads", Ints{1, 1, 1, 1}}};
}

// Runs `pass` on a copy of `before` and checks it computes the same outputs on `inputs`.
Graph optimized_copy(const Graph &before, std::unique_ptr<Pass> pass,
                     const std::vector<Tensor> &inputs, std::vector<std::string> *notes = nullptr) {
  Graph after = before.clone();
  auto n = run_pass(*pass, after);
  if (notes) *notes = n;
  EXPECT_TRUE(same_outputs(before, after, inputs, kTol, kTol));
  return after;
}

// The ops of the compiled steps, in order; checks every step runs on the cpu backend.
std::vector<std::string> compiled_ops(const Graph &g, std::vector<StepInfo> *steps = nullptr) {
  Runtime rt(RuntimeOptions{.num_threads = 2});
  std::vector<std::string> ops;
  for (const StepInfo &s : g.compile(&rt)->steps()) {
    ops.push_back(s.op);
    EXPECT_EQ(s.backend, "cpu") << s.node;
    if (steps) steps->push_back(s);
  }
  return ops;
}

// --- trim_conv_taps ------------------------------------------------------------------------------

// The weight shape of the one conv-like node `g` holds after the pass.
Shape conv_weight_shape(const Graph &g) {
  for (const Node *n : g.nodes())
    if (n->op() == "conv2d" || n->op() == "fused_conv" || n->op() == "conv_nd")
      return n->input(1)->shape();
  ADD_FAILURE() << "no conv";
  return {};
}

TEST(TrimConvTapsPass, DilatedConvOnASmallMapKeepsTheTapsThatReadTheInput) {
  // ASPP: dilation 24 on 14x14, only the centre tap meets the input; a fused_conv with a
  // residual and an activation; a 1-D conv_nd; and a stride-1 case trimmed on one side only
  // (dilation 3, pads 3/0 on a 4-wide map: tap 0 reads only padding).
  struct Case {
    std::string op;
    Shape x, w;
    Attributes attrs;
    Shape trimmed;
  };
  Attributes fused{{"pads", Ints{24, 24, 24, 24}}, {"dilations", Ints{24, 24}}};
  fused.set("activation", std::string("relu"));
  const std::vector<Case> cases = {
      {"conv2d",
       {2, 8, 14, 14},
       {6, 8, 3, 3},
       {{"pads", Ints{24, 24, 24, 24}}, {"dilations", Ints{24, 24}}},
       {6, 8, 1, 1}},
      {"fused_conv", {1, 8, 14, 14}, {6, 8, 3, 3}, fused, {6, 8, 1, 1}},
      {"conv_nd", {1, 4, 6}, {5, 4, 3}, {{"pads", Ints{8, 8}}, {"dilations", Ints{8}}}, {5, 4, 1}},
      {"conv2d",
       {1, 3, 4, 4},
       {2, 3, 3, 3},
       {{"pads", Ints{3, 3, 0, 0}}, {"dilations", Ints{3, 3}}, {"kernel_shape", Ints{3, 3}}},
       {2, 3, 2, 2}},
  };
  for (const Case &c : cases) {
    Graph g;
    Value *x = g.add_input("x", c.x);
    std::vector<Value *> inputs = {x, constant(g, "w", c.w, 1),
                                   constant(g, "b", {c.w[0]}, 2, 0.5, 1.5)};
    if (c.op == "fused_conv") inputs.push_back(g.add_input("z", {1, 6, 14, 14}));  // residual
    g.mark_output(g.add_op(c.op, inputs, c.attrs));
    std::vector<Tensor> feeds = {random_tensor(c.x, 3)};
    if (c.op == "fused_conv") feeds.push_back(random_tensor({1, 6, 14, 14}, 4));
    std::vector<std::string> notes;
    const Graph after = optimized_copy(g, make_trim_conv_taps(), feeds, &notes);
    EXPECT_EQ(conv_weight_shape(after), c.trimmed) << c.op;
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("taps that read only padding dropped"), std::string::npos);
  }
}

TEST(TrimConvTapsPass, KeepsTapsEveryOutputNeedsOrThatWouldNeedANegativePad) {
  // Dilation 12 on 14x14: the outer taps meet the input at the border; stride 2, dilation 2,
  // pad 1 on a 4-wide map: tap 0 reads only padding but dropping it would leave a pad of -1;
  // spatial dims known only at run time.
  struct Case {
    Shape x, w;
    Attributes attrs;
  };
  const std::vector<Case> cases = {
      {{1, 4, 14, 14}, {4, 4, 3, 3}, {{"pads", Ints{12, 12, 12, 12}}, {"dilations", Ints{12, 12}}}},
      {{1, 2, 4, 4},
       {2, 2, 3, 3},
       {{"pads", Ints{1, 1, 1, 1}}, {"dilations", Ints{2, 2}}, {"strides", Ints{2, 2}}}},
      {{1, 4, kUnknownDim, kUnknownDim},
       {4, 4, 3, 3},
       {{"pads", Ints{24, 24, 24, 24}}, {"dilations", Ints{24, 24}}}},
  };
  for (const Case &c : cases) {
    Graph g;
    g.mark_output(g.add_op("conv2d", {g.add_input("x", c.x), constant(g, "w", c.w, 1)}, c.attrs));
    run_pass(*make_trim_conv_taps(), g, false);
  }
}

// --- fold_conv_batch_norm ----------------------------------------------------------------------

TEST(FoldConvBatchNormPass, FoldsWithAndWithoutConvBias) {
  for (bool conv_bias : {true, false}) {
    SCOPED_TRACE(conv_bias ? "conv bias" : "no conv bias");
    Graph g;
    Value *x = g.add_input("x", {2, 3, 7, 7});
    Value *w = g.add_weight("w", {6, 3, 3, 3});
    std::vector<Value *> conv_inputs = {x, w};
    if (conv_bias) conv_inputs.push_back(g.add_weight("b", {6}));
    Value *conv = g.add_op("conv2d", conv_inputs, pads1(), "conv1");
    g.mark_output(batch_norm(g, conv, 6, "bn1"));
    std::vector<std::string> notes;
    Graph after =
        optimized_copy(g, make_fold_conv_batch_norm(), {random_tensor({2, 3, 7, 7}, 7)}, &notes);
    EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"conv2d", 1}}));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("conv2d 'conv1' + batch_norm 'bn1' -> conv2d"), std::string::npos)
        << notes[0];
    EXPECT_EQ(after.outputs()[0]->name(), "bn1");  // graph output names are kept
  }
}

TEST(FoldConvBatchNormPass, FoldsGroupedConvFloat64) {
  Graph g;
  Value *x = g.add_input("x", {1, 4, 6, 6}, DType::Float64);
  Value *w = constant(g, "w", {8, 2, 3, 3}, 1, -1, 1, DType::Float64);
  Value *conv = g.add_op("conv2d", {x, w}, {{"group", int64_t{2}}}, "conv1");
  Value *scale = constant(g, "s", {8}, 2, 0.5, 1.5, DType::Float64);
  Value *beta = constant(g, "b", {8}, 3, -1, 1, DType::Float64);
  Value *mean = constant(g, "m", {8}, 4, -1, 1, DType::Float64);
  Value *var = constant(g, "v", {8}, 5, 0.5, 1.5, DType::Float64);
  Value *bn = g.add_op("batch_norm", {conv, scale, beta, mean, var}, {}, "bn1");
  g.mark_output(g.add_op("relu", {bn}));
  Graph after = g.clone();
  run_pass(*make_fold_conv_batch_norm(), after);
  EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"conv2d", 1}, {"relu", 1}}));
  const Tensor input = random_tensor({1, 4, 6, 6}, 6, -1, 1, DType::Float64);
  EXPECT_TRUE(same_outputs(g, after, {input}, 1e-10, 1e-10, "reference"));  // float64 conv
}

// Exporters write a frozen batch norm as mul + add by per-channel constants: conv -> mul folds into
// the weights, the add into the bias, and the relu into the epilogue: one fused_conv.
TEST(FoldConvBatchNormPass, FoldsPerChannelMulThenTheAddAndReluFuse) {
  for (bool conv_bias : {true, false}) {
    SCOPED_TRACE(conv_bias ? "conv bias" : "no conv bias");
    Graph g;
    Value *x = g.add_input("x", {2, 3, 7, 7});
    std::vector<Value *> conv_inputs = {x, g.add_weight("w", {6, 3, 3, 3})};
    if (conv_bias) conv_inputs.push_back(g.add_weight("b", {6}));
    Value *conv = g.add_op("conv2d", conv_inputs, pads1(), "conv1");
    Value *mul = g.add_op("mul", {constant(g, "s", {6, 1, 1}, 2, 0.5, 1.5), conv}, {}, "mul1");
    Value *add = g.add_op("add", {mul, constant(g, "t", {1, 6, 1, 1}, 3, -1, 1)}, {}, "add1");
    g.mark_output(g.add_op("relu", {add}, {}, "relu1"));
    std::vector<std::string> notes;
    Graph after =
        optimized_copy(g, make_fold_conv_batch_norm(), {random_tensor({2, 3, 7, 7}, 7)}, &notes);
    EXPECT_EQ(op_counts(after),
              (std::map<std::string, int>{{"add", 1}, {"conv2d", 1}, {"relu", 1}}));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("conv2d 'conv1' + mul 'mul1' -> conv2d"), std::string::npos)
        << notes[0];
    Graph fused = g.clone();
    fused.optimize(2);
    EXPECT_EQ(op_counts(fused), (std::map<std::string, int>{{"fused_conv", 1}}));
    EXPECT_TRUE(same_outputs(g, fused, {random_tensor({2, 3, 7, 7}, 8)}, 1e-5, 1e-5));
  }
}

TEST(FoldConvBatchNormPass, DoesNotFoldMulByANonPerChannelTensor) {
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 5});
  Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {4, 3, 3, 3})});
  // Per output column, not per channel: folding it into the weights would be wrong.
  g.mark_output(g.add_op("mul", {conv, constant(g, "s", {1, 1, 1, 3}, 2, 0.5, 1.5)}));
  run_pass(*make_fold_conv_batch_norm(), g, false);
}

TEST(FoldConvBatchNormPass, DoesNotFoldConvWithSecondUser) {
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 5});
  Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {4, 3, 3, 3})});
  g.mark_output(batch_norm(g, conv, 4, "bn"));
  g.mark_output(g.add_op("relu", {conv}));
  run_pass(*make_fold_conv_batch_norm(), g, false);
}

TEST(FoldConvBatchNormPass, DoesNotFoldConvThatIsAGraphOutput) {
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 5});
  Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {4, 3, 3, 3})});
  g.mark_output(batch_norm(g, conv, 4, "bn"));
  g.mark_output(conv);
  run_pass(*make_fold_conv_batch_norm(), g, false);
}

TEST(FoldConvBatchNormPass, DoesNotFoldNonConstantParameters) {
  // A batch_norm mean given at run time, and a conv weight given at run time.
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 5});
  Value *mean = g.add_input("mean", {4});
  Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {4, 3, 3, 3})});
  g.mark_output(
      g.add_op("batch_norm", {conv, constant(g, "s", {4}, 1, 0.5, 1), constant(g, "b", {4}, 2),
                              mean, constant(g, "v", {4}, 3, 0.5, 1)}));
  Value *w = g.add_input("w_runtime", {4, 3, 3, 3});
  g.mark_output(batch_norm(g, g.add_op("conv2d", {x, w}), 4, "bn2"));
  run_pass(*make_fold_conv_batch_norm(), g, false);
}

// DenseNet's pre-activation batch norm follows a concat, not a conv: it becomes a depthwise 1x1
// conv, and the frozen-BN mul + add and the relu after it fold and fuse into that conv.
TEST(FoldConvBatchNormPass, BatchNormWithoutConvBecomesDepthwiseConvThatFusesItsFollowers) {
  Graph g;
  Value *a = g.add_input("a", {2, 3, 5, 5});
  Value *b = g.add_input("b", {2, 4, 5, 5});
  Value *cat = g.add_op("concat", {a, b}, {{"axis", int64_t{1}}}, "cat");
  Value *bn = batch_norm(g, cat, 7, "bn1");
  Value *mul = g.add_op("mul", {bn, constant(g, "s", {7, 1, 1}, 2, 0.5, 1.5)}, {}, "mul1");
  Value *add = g.add_op("add", {mul, constant(g, "t", {1, 7, 1, 1}, 3, -1, 1)}, {}, "add1");
  g.mark_output(g.add_op("relu", {add}, {}, "relu1"));
  const std::vector<Tensor> inputs{random_tensor({2, 3, 5, 5}, 4, -2, 2),
                                   random_tensor({2, 4, 5, 5}, 5, -2, 2)};
  std::vector<std::string> notes;
  Graph after = optimized_copy(g, make_fold_conv_batch_norm(), inputs, &notes);
  EXPECT_EQ(op_counts(after),
            (std::map<std::string, int>{{"add", 1}, {"concat", 1}, {"conv2d", 1}, {"relu", 1}}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("batch_norm 'bn1' -> depthwise conv2d"), std::string::npos) << notes[0];
  Graph fused = g.clone();
  fused.optimize(2);
  EXPECT_EQ(compiled_ops(fused), (std::vector<std::string>{"concat", "fused_conv"}));
  EXPECT_TRUE(same_outputs(g, fused, inputs, 1e-5, 1e-5));
}

TEST(FoldConvBatchNormPass, KeepsBatchNormItCannotRewrite) {
  Graph g;
  // float64 (the cpu conv kernel is float32), rank 3, and a batch_norm of a conv's second use.
  Value *x64 = g.add_input("x64", {1, 3, 4, 4}, DType::Float64);
  Value *s = constant(g, "s", {3}, 1, 0.5, 1.5, DType::Float64);
  Value *b = constant(g, "b", {3}, 2, -1, 1, DType::Float64);
  Value *m = constant(g, "m", {3}, 3, -1, 1, DType::Float64);
  Value *v = constant(g, "v", {3}, 4, 0.5, 1.5, DType::Float64);
  g.mark_output(g.add_op("batch_norm", {x64, s, b, m, v}));
  g.mark_output(batch_norm(g, g.add_input("x3", {2, 5, 6}), 5, "bn_rank3"));
  Value *conv =
      g.add_op("conv2d", {g.add_input("x", {1, 3, 5, 5}), g.add_weight("w", {4, 3, 1, 1})});
  g.mark_output(conv);
  g.mark_output(batch_norm(g, conv, 4, "bn_after_conv"));
  run_pass(*make_fold_conv_batch_norm(), g, false);
}

// --- matmul_add_to_gemm ------------------------------------------------------------------------

TEST(MatmulAddToGemmPass, TwoDimensionalBiasShapesBecomeGemm) {
  for (const Shape &bias_shape : {Shape{5}, Shape{1, 5}, Shape{3, 5}, Shape{3, 1}, Shape{}}) {
    for (bool bias_first : {false, true}) {
      SCOPED_TRACE(bias_shape.to_string() + (bias_first ? " bias first" : ""));
      Graph g;
      Value *a = g.add_input("a", {3, 4});
      Value *b = g.add_weight("b", {4, 5});
      Value *bias = g.add_input("bias", bias_shape);  // Gemm's C may be a run-time value
      Value *mm = g.add_op("matmul", {a, b}, {}, "mm");
      g.mark_output(g.add_op(
          "add", bias_first ? std::vector<Value *>{bias, mm} : std::vector<Value *>{mm, bias}, {},
          "y"));
      std::vector<std::string> notes;
      Graph after =
          optimized_copy(g, make_matmul_add_to_gemm(),
                         {random_tensor({3, 4}, 1), random_tensor(bias_shape, 2)}, &notes);
      EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"gemm", 1}}));
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find("matmul 'mm' + add 'y' -> gemm"), std::string::npos) << notes[0];
      EXPECT_EQ(after.outputs()[0]->name(), "y");
    }
  }
}

TEST(MatmulAddToGemmPass, BatchedActivationsBecomeFusedMatmul) {
  Graph g;
  Value *x = g.add_input("x", {2, 5, 8});
  Value *w = g.add_weight("w", {8, 6});
  Value *bias = g.add_weight("bias", {6});
  g.mark_output(g.add_op("add", {g.add_op("matmul", {x, w}), bias}));
  Graph after = optimized_copy(g, make_matmul_add_to_gemm(), {random_tensor({2, 5, 8}, 3)});
  EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"fused_matmul", 1}}));
}

// Transformer activations with a symbolic batch and sequence: the bias along the fixed last dim.
TEST(MatmulAddToGemmPass, SymbolicActivationsBecomeFusedMatmul) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, kUnknownDim, 8});
  g.set_dim_names(x, {"batch", "seq", ""});
  Value *w = g.add_weight("w", {8, 6});
  Value *bias = g.add_weight("bias", {6});
  g.mark_output(g.add_op("add", {g.add_op("matmul", {x, w}), bias}));
  g.infer_symbolic_shapes();
  Graph after = optimized_copy(g, make_matmul_add_to_gemm(), {random_tensor({3, 5, 8}, 3)});
  EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"fused_matmul", 1}}));
}

TEST(MatmulAddToGemmPass, DoesNotFireOnOtherShapesOrUses) {
  Graph g;
  Value *a = g.add_input("a", {3, 4});
  Value *b = g.add_weight("b", {4, 5});
  // The add broadcasts the product to [2, 3, 5]: not what Gemm's C can express.
  g.mark_output(g.add_op("add", {g.add_op("matmul", {a, b}), g.add_input("big", {2, 3, 5})}));
  // A second user of the product.
  Value *mm2 = g.add_op("matmul", {a, b});
  g.mark_output(g.add_op("add", {mm2, g.add_weight("bias2", {5})}));
  g.mark_output(g.add_op("relu", {mm2}));
  // The product is a graph output.
  Value *mm3 = g.add_op("matmul", {a, b});
  g.mark_output(mm3);
  g.mark_output(g.add_op("add", {mm3, g.add_weight("bias3", {5})}));
  // Batched: a bias that is not [N].
  Value *x = g.add_input("x", {2, 3, 4});
  g.mark_output(g.add_op("add", {g.add_op("matmul", {x, b}), g.add_weight("bias4", {3, 5})}));
  // Batched float16 product: no fused_matmul kernel for it.
  Value *h = g.add_input("h", {2, 3, 4}, DType::Float16);
  Value *hw = g.add_input("hw", {4, 5}, DType::Float16);
  g.mark_output(
      g.add_op("add", {g.add_op("matmul", {h, hw}), g.add_input("hb", {5}, DType::Float16)}));
  run_pass(*make_matmul_add_to_gemm(), g, false);
}

// --- fuse_bias_activation ----------------------------------------------------------------------

struct ActivationOp {
  std::string op;
  Attributes attrs;
};

std::vector<ActivationOp> activation_ops() {
  return {{"relu", {}},
          {"leaky_relu", {{"alpha", 0.2}}},
          {"clip", {{"min", -0.2}, {"max", 0.5}}},
          {"sigmoid", {}},
          {"silu", {}},
          {"tanh", {}},
          {"gelu", {{"approximate", std::string("tanh")}}},
          {"hard_swish", {}},
          {"hard_sigmoid", {{"alpha", 0.3}, {"beta", 0.6}}}};
}

TEST(FuseBiasActivationPass, ConvFollowedByEveryActivation) {
  for (const ActivationOp &act : activation_ops()) {
    SCOPED_TRACE(act.op);
    Graph g;
    Value *x = g.add_input("x", {1, 3, 6, 6});
    Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {4, 3, 3, 3}), g.add_weight("b", {4})},
                           pads1(), "conv1");
    g.mark_output(g.add_op(act.op, {conv}, act.attrs, "act1"));
    std::vector<std::string> notes;
    Graph after =
        optimized_copy(g, make_fuse_bias_activation(), {random_tensor({1, 3, 6, 6}, 4)}, &notes);
    EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"fused_conv", 1}}));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("conv2d 'conv1' + " + act.op + " 'act1' -> fused_conv"),
              std::string::npos)
        << notes[0];
    EXPECT_EQ(after.nodes()[0]->attrs().get_string("activation", ""), act.op);
  }
}

TEST(FuseBiasActivationPass, GemmAndMatmulTakeActivations) {
  Graph g;
  Value *a = g.add_input("a", {4, 6});
  Value *gemm = g.add_op("gemm", {a, g.add_weight("w1", {5, 6}), g.add_weight("c1", {5})},
                         {{"transB", int64_t{1}}});
  g.mark_output(g.add_op("relu", {gemm}));
  Value *x = g.add_input("x", {2, 3, 6});
  g.mark_output(g.add_op("gelu", {g.add_op("matmul", {x, g.add_weight("w2", {6, 7})})}));
  // A fused_matmul from matmul_add_to_gemm still takes an activation.
  Value *fm = g.add_op("fused_matmul", {x, g.add_weight("w3", {6, 7}), g.add_weight("b3", {7})});
  g.mark_output(g.add_op("silu", {fm}));
  Graph after = optimized_copy(g, make_fuse_bias_activation(),
                               {random_tensor({4, 6}, 5), random_tensor({2, 3, 6}, 6)});
  EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"fused_gemm", 1}, {"fused_matmul", 2}}));
}

TEST(FuseBiasActivationPass, PerChannelConstantFoldsIntoConvBias) {
  // [1, M, 1, 1] onto a conv with a bias, then relu; [M, 1, 1] onto a conv without one.
  Graph g;
  Value *x = g.add_input("x", {2, 3, 5, 5});
  Value *c1 = g.add_op("conv2d", {x, g.add_weight("w1", {4, 3, 3, 3}), g.add_weight("b1", {4})});
  Value *y1 = g.add_op("add", {c1, constant(g, "k1", {1, 4, 1, 1}, 9)});
  g.mark_output(g.add_op("relu", {y1}));
  Value *c2 = g.add_op("conv2d", {x, g.add_weight("w2", {4, 3, 1, 1})});
  g.mark_output(g.add_op("add", {constant(g, "k2", {4, 1, 1}, 10), c2}));
  Graph after = optimized_copy(g, make_fuse_bias_activation(), {random_tensor({2, 3, 5, 5}, 11)});
  EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"conv2d", 1}, {"fused_conv", 1}}));
}

TEST(FuseBiasActivationPass, DoesNotFireWhenItWouldChangeSomething) {
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 5});
  auto conv = [&] {
    return g.add_op("conv2d", {x, g.add_weight(g.fresh_name("w"), {4, 3, 3, 3})});
  };
  // Second user.
  Value *c1 = conv();
  g.mark_output(g.add_op("relu", {c1}));
  g.mark_output(g.add_op("sigmoid", {c1}));
  // Graph output in the middle.
  Value *c2 = conv();
  g.mark_output(c2);
  g.mark_output(g.add_op("relu", {c2}));
  // Already has an activation: a second one cannot be expressed.
  Value *c3 = g.add_op("fused_conv", {x, g.add_weight("w3", {4, 3, 3, 3})},
                       {{"activation", std::string("relu")}});
  g.mark_output(g.add_op("sigmoid", {c3}));
  // Not an epilogue activation.
  g.mark_output(g.add_op("elu", {conv()}));
  // Per-channel bias that is not a constant, and a constant that is not per channel.
  g.mark_output(g.add_op("add", {conv(), g.add_input("k", {1, 4, 1, 1})}));
  g.mark_output(g.add_op("add", {conv(), constant(g, "k_hw", {1, 1, 3, 3}, 3)}));
  // Wrong dtype: a float16 product has no fused kernel.
  Value *h = g.add_input("h", {2, 3}, DType::Float16);
  Value *hw = g.add_input("hw", {3, 4}, DType::Float16);
  g.mark_output(g.add_op("relu", {g.add_op("gemm", {h, hw})}));
  run_pass(*make_fuse_bias_activation(), g, false);
}

// --- fuse_residual_add -------------------------------------------------------------------------

TEST(FuseResidualAddPass, ConvPlusSameShapeOperand) {
  for (bool conv_first : {true, false}) {
    SCOPED_TRACE(conv_first ? "add(conv, z)" : "add(z, conv)");
    Graph g;
    Value *x = g.add_input("x", {2, 4, 6, 6});
    Value *z = g.add_input("z", {2, 5, 6, 6});
    Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {5, 4, 3, 3}), g.add_weight("b", {5})},
                           pads1(), "conv1");
    g.mark_output(
        g.add_op("add", conv_first ? std::vector<Value *>{conv, z} : std::vector<Value *>{z, conv},
                 {}, "sum"));
    std::vector<std::string> notes;
    Graph after =
        optimized_copy(g, make_fuse_residual_add(),
                       {random_tensor({2, 4, 6, 6}, 1), random_tensor({2, 5, 6, 6}, 2)}, &notes);
    EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"fused_conv", 1}}));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("conv2d 'conv1' + add 'sum' -> fused_conv"), std::string::npos)
        << notes[0];
    const Node *fused = after.nodes()[0];
    ASSERT_EQ(fused->inputs().size(), 4u);
    EXPECT_EQ(fused->input(3)->name(), "z");
  }
}

TEST(FuseResidualAddPass, DoesNotFireOnBroadcastsOrOtherUses) {
  Graph g;
  Value *x = g.add_input("x", {1, 4, 6, 6});
  auto conv = [&] {
    return g.add_op("conv2d", {x, g.add_weight(g.fresh_name("w"), {4, 4, 3, 3})}, pads1());
  };
  // Broadcasting operands: per channel, and a smaller batch.
  g.mark_output(g.add_op("add", {conv(), g.add_input("z_channel", {1, 4, 1, 1})}));
  g.mark_output(g.add_op("add", {conv(), g.add_input("z_plane", {6, 6})}));
  // Second user.
  Value *c1 = conv();
  g.mark_output(g.add_op("add", {c1, x}));
  g.mark_output(g.add_op("relu", {c1}));
  // Graph output in the middle.
  Value *c2 = conv();
  g.mark_output(c2);
  g.mark_output(g.add_op("add", {c2, x}));
  // The conv reads itself through the add: add(conv, conv).
  Value *c3 = conv();
  g.mark_output(g.add_op("add", {c3, c3}));
  // An activation already applied: act(conv) + z is not act(conv + z).
  Value *c4 = g.add_op("fused_conv", {x, g.add_weight("w4", {4, 4, 3, 3})},
                       {{"activation", std::string("relu")}, {"pads", Ints{1, 1, 1, 1}}});
  g.mark_output(g.add_op("add", {c4, x}));
  // Unknown dims could hide a broadcast.
  Value *xd = g.add_input("xd", {kUnknownDim, 4, 6, 6});
  Value *zd = g.add_input("zd", {kUnknownDim, 4, 6, 6});
  g.mark_output(
      g.add_op("add", {g.add_op("conv2d", {xd, g.add_weight("w5", {4, 4, 3, 3})}, pads1()), zd}));
  run_pass(*make_fuse_residual_add(), g, false);
}

// --- fuse_conv_max_pool ------------------------------------------------------------------------

// conv(x, w) (relu fused) -> max_pool2d 3x3 s2: a first layer (min_bytes 0: any size of output).
Value *first_layer(Graph &g, Value *x, const Shape &w, const Attributes &conv_attrs,
                   const std::string &activation = "relu") {
  Attributes attrs = conv_attrs;
  if (!activation.empty()) attrs.set("activation", activation);
  // Named in separate statements: the order of a call's argument evaluation is unspecified
  // (GCC and clang differ), and the names are in the notes the tests check.
  const std::string conv_name = g.fresh_name("conv");
  Value *weight = g.add_weight(g.fresh_name("w"), w);
  Value *conv = g.add_op("fused_conv", {x, weight}, attrs, conv_name);
  return g.add_op("max_pool2d", {conv}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}},
                  g.fresh_name("pool"));
}

TEST(FuseConvMaxPoolPass, ShallowConvAndItsPoolBecomeOneNode) {
  Graph g;
  Value *x = g.add_input("x", {2, 3, 23, 21});
  g.mark_output(first_layer(g, x, {10, 3, 3, 3}, {{"strides", Ints{2, 2}}}));
  std::vector<std::string> notes;
  Graph after =
      optimized_copy(g, make_fuse_conv_max_pool(0), {random_tensor({2, 3, 23, 21}, 1)}, &notes);
  EXPECT_EQ(op_counts(after), (std::map<std::string, int>{{"fused_conv_max_pool", 1}}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("fused_conv 'conv_0' + max_pool2d 'pool_2' -> fused_conv_max_pool"),
            std::string::npos)
      << notes[0];
  const std::string attrs = after.nodes()[0]->attrs().to_string();
  EXPECT_NE(attrs.find("pool_kernel_shape=[3, 3]"), std::string::npos) << attrs;
  EXPECT_NE(attrs.find("activation=\"relu\""), std::string::npos) << attrs;
  // The default threshold (1 MiB of conv output per image) leaves this small graph alone.
  Graph small = g.clone();
  run_pass(*make_fuse_conv_max_pool(), small, false);
}

TEST(FuseConvMaxPoolPass, DoesNotFireWhenItWouldNotHelpOrCannot) {
  Graph g;
  Value *x = g.add_input("x", {1, 8, 20, 20});
  // Deep: 8 * 3 * 3 = 72 values per output.
  g.mark_output(first_layer(g, x, {8, 8, 3, 3}, pads1()));
  // Grouped.
  g.mark_output(first_layer(g, x, {8, 2, 3, 3}, {{"group", int64_t{4}}}));
  // An activation the GEMM's store cannot clamp.
  g.mark_output(first_layer(g, x, {8, 8, 1, 1}, {}, "sigmoid"));
  // The conv's output has a second user.
  Value *conv = g.add_op("fused_conv", {x, g.add_weight("w_shared", {8, 8, 1, 1})});
  g.mark_output(g.add_op("max_pool2d", {conv}, {{"kernel_shape", Ints{3, 3}}}));
  g.mark_output(g.add_op("relu", {conv}));
  run_pass(*make_fuse_conv_max_pool(0), g, false);
}

// --- fuse_pointwise_depthwise ------------------------------------------------------------------

// A blocked pointwise conv of x to `m` channels (attributes `attrs`), its output t.
Value *blocked_pointwise(Graph &g, Value *xb, int64_t c, int64_t m, Attributes attrs = {}) {
  const std::string name = g.fresh_name("pointwise");
  Value *w = g.add_weight(g.fresh_name("w"), {m, c, 1, 1});
  Value *b = g.add_weight(g.fresh_name("b"), {m});
  attrs.set("activation", std::string("clip"));
  attrs.set("activation_min", 0.0);
  attrs.set("activation_max", 6.0);
  return g.add_op("nchwc_conv", {xb, w, b}, attrs, name);
}

// A blocked 3x3 depthwise conv of t (m channels), stride `stride`; z: a residual or nullptr.
Value *blocked_depthwise(Graph &g, Value *t, int64_t m, int64_t stride, Value *z = nullptr) {
  const std::string name = g.fresh_name("depthwise");
  Value *w = g.add_weight(g.fresh_name("w"), {m, 1, 3, 3});
  Value *b = g.add_weight(g.fresh_name("b"), {m});
  std::vector<Value *> inputs{t, w, b};
  if (z) inputs.push_back(z);
  return g.add_op("nchwc_conv", inputs,
                  {{"group", m},
                   {"strides", Ints{stride, stride}},
                   {"pads", Ints{1, 1, 1, 1}},
                   {"activation", std::string("relu")}},
                  name);
}

TEST(FusePointwiseDepthwisePass, ExpansionAndDepthwiseConvBecomeOneNode) {
  Graph g;
  Value *x = g.add_input("x", {2, 16, 13, 12});
  Value *xb = g.add_op("to_nchwc", {x});
  Value *t = blocked_pointwise(g, xb, 16, 48);
  g.mark_output(g.add_op("from_nchwc", {blocked_depthwise(g, t, 48, 2)}));
  std::vector<std::string> notes;
  Graph after = optimized_copy(g, make_fuse_pointwise_depthwise(),
                               {random_tensor({2, 16, 13, 12}, 1)}, &notes);
  EXPECT_EQ(op_counts(after),
            (std::map<std::string, int>{
                {"to_nchwc", 1}, {"nchwc_pointwise_depthwise", 1}, {"from_nchwc", 1}}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("nchwc_conv 'pointwise_1' + nchwc_conv 'depthwise_4' -> "
                          "nchwc_pointwise_depthwise"),
            std::string::npos)
      << notes[0];
  for (const Node *n : after.nodes()) {
    if (n->op() != "nchwc_pointwise_depthwise") continue;
    const std::string attrs = n->attrs().to_string();
    EXPECT_NE(attrs.find("pointwise_activation=\"clip\""), std::string::npos) << attrs;
    EXPECT_NE(attrs.find("pointwise_activation_max=6"), std::string::npos) << attrs;
    EXPECT_NE(attrs.find("strides=[2, 2]"), std::string::npos) << attrs;
  }
}

TEST(FusePointwiseDepthwisePass, DoesNotFireWhenItCannot) {
  Graph g;
  Value *x = g.add_input("x", {1, 16, 10, 10});
  Value *xb = g.add_op("to_nchwc", {x});
  // t has a second user.
  Value *shared = blocked_pointwise(g, xb, 16, 16);
  g.mark_output(g.add_op("from_nchwc", {blocked_depthwise(g, shared, 16, 1)}));
  g.mark_output(g.add_op("from_nchwc", {shared}));
  // A strided pointwise conv.
  Value *strided = blocked_pointwise(g, xb, 16, 16, {{"strides", Ints{2, 2}}});
  g.mark_output(g.add_op("from_nchwc", {blocked_depthwise(g, strided, 16, 1)}));
  // A depthwise conv with a residual.
  Value *t = blocked_pointwise(g, xb, 16, 16);
  g.mark_output(g.add_op("from_nchwc", {blocked_depthwise(g, t, 16, 1, xb)}));
  // A dense 3x3 conv after the pointwise one.
  Value *t2 = blocked_pointwise(g, xb, 16, 16);
  g.mark_output(
      g.add_op("from_nchwc", {g.add_op("nchwc_conv", {t2, g.add_weight("w_dense", {16, 16, 3, 3})},
                                       {{"pads", Ints{1, 1, 1, 1}}})}));
  run_pass(*make_fuse_pointwise_depthwise(), g, false);
}

// --- the pipeline ------------------------------------------------------------------------------

TEST(FusionPipeline, ConvReluIsOneFusedConv) {
  Graph g;
  Value *x = g.add_input("x", {1, 3, 8, 8});
  Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {8, 3, 3, 3}), g.add_weight("b", {8})},
                         pads1(), "conv1");
  g.mark_output(g.add_op("relu", {conv}, {}, "relu1"));
  Graph optimized = g.clone();
  optimized.optimize(2);
  std::vector<StepInfo> steps;
  EXPECT_EQ(compiled_ops(optimized, &steps), (std::vector<std::string>{"fused_conv"}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].attributes.find("activation=\"relu\""), std::string::npos);
  EXPECT_TRUE(same_outputs(g, optimized, {random_tensor({1, 3, 8, 8}, 3)}, kTol, kTol));
}

TEST(FusionPipeline, ConvBatchNormReluIsOneFusedConv) {
  Graph g;
  Value *x = g.add_input("x", {1, 3, 8, 8});
  Value *conv = g.add_op("conv2d", {x, g.add_weight("w", {8, 3, 3, 3})}, pads1(), "conv1");
  g.mark_output(g.add_op("relu", {batch_norm(g, conv, 8, "bn1")}, {}, "relu1"));
  Graph optimized = g.clone();
  optimized.optimize(2);
  std::vector<StepInfo> steps;
  EXPECT_EQ(compiled_ops(optimized, &steps), (std::vector<std::string>{"fused_conv"}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].attributes.find("activation=\"relu\""), std::string::npos)
      << steps[0].attributes;
  EXPECT_EQ(optimized.outputs()[0]->name(), "relu1");
  EXPECT_TRUE(same_outputs(g, optimized, {random_tensor({1, 3, 8, 8}, 1)}, kTol, kTol));
}

TEST(FusionPipeline, ResNetBasicBlockIsTwoFusedConvs) {
  // conv -> bn -> relu -> conv -> bn -> add(shortcut) -> relu, on 6 channels: not whole blocks
  // of the channel-blocked layout, whose pass would otherwise take the convs over.
  Graph g;
  Value *x = g.add_input("x", {2, 6, 10, 10});
  Value *c1 = g.add_op("conv2d", {x, g.add_weight("w1", {6, 6, 3, 3})}, pads1(), "conv1");
  Value *r1 = g.add_op("relu", {batch_norm(g, c1, 6, "bn1", 10)}, {}, "relu1");
  Value *c2 = g.add_op("conv2d", {r1, g.add_weight("w2", {6, 6, 3, 3})}, pads1(), "conv2");
  Value *sum = g.add_op("add", {batch_norm(g, c2, 6, "bn2", 20), x}, {}, "add");
  g.mark_output(g.add_op("relu", {sum}, {}, "out"));
  Graph optimized = g.clone();
  const OptimizeReport report = optimized.optimize(2);
  std::vector<StepInfo> steps;
  EXPECT_EQ(compiled_ops(optimized, &steps), (std::vector<std::string>{"fused_conv", "fused_conv"}))
      << report.to_string();
  for (const StepInfo &s : steps)
    EXPECT_NE(s.attributes.find("activation=\"relu\""), std::string::npos) << s.attributes;
  // The second conv reads the block's input as its residual.
  const Node *last = optimized.outputs()[0]->producer();
  ASSERT_EQ(last->inputs().size(), 4u);
  EXPECT_EQ(last->input(3), optimized.find_value("x"));
  EXPECT_EQ(optimized.outputs()[0]->name(), "out");
  EXPECT_TRUE(same_outputs(g, optimized, {random_tensor({2, 6, 10, 10}, 2)}, kTol, kTol));
}

TEST(FusionPipeline, TransformerMlpIsTwoFusedMatmuls) {
  // [batch, seq, hidden] -> matmul + bias -> gelu -> matmul + bias
  Graph g;
  Value *x = g.add_input("x", {2, 5, 16});
  Value *h = g.add_op(
      "add", {g.add_op("matmul", {x, g.add_weight("w1", {16, 32})}), g.add_weight("b1", {32})});
  Value *y = g.add_op("add",
                      {g.add_op("matmul", {g.add_op("gelu", {h}), g.add_weight("w2", {32, 16})}),
                       g.add_weight("b2", {16})},
                      {}, "y");
  g.mark_output(y);
  Graph optimized = g.clone();
  optimized.optimize(2);
  EXPECT_EQ(compiled_ops(optimized), (std::vector<std::string>{"fused_matmul", "fused_matmul"}));
  EXPECT_TRUE(same_outputs(g, optimized, {random_tensor({2, 5, 16}, 3)}, kTol, kTol));
}

// nchwc_layout: a pointwise -> depthwise -> pointwise chain (with a residual) runs blocked, with
// one layout change in and one out, a dense conv reading the same input joining it; a lone conv
// and a chain of 1x1 convs only stay.
TEST(NchwcLayoutPass, BlocksAChainOfPointwiseAndDepthwiseConvs) {
  Graph g;
  Value *x = g.add_input("x", {2, 16, 9, 7});
  Value *e =
      g.add_op("fused_conv", {x, constant(g, "we", {32, 16, 1, 1}, 1), constant(g, "be", {32}, 2)},
               {{"activation", std::string("relu")}});
  Value *d =
      g.add_op("conv2d", {e, constant(g, "wd", {32, 1, 3, 3}, 3), constant(g, "bd", {32}, 4)},
               {{"group", int64_t{32}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  Value *z = g.add_op("conv2d", {x, constant(g, "wz", {16, 16, 3, 3}, 5)},
                      {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});  // dense
  Value *p = g.add_op("fused_conv", {d, constant(g, "wp", {16, 32, 1, 1}, 6), nullptr, z}, {});
  g.mark_output(p);
  const std::vector<Tensor> inputs = {random_tensor({2, 16, 9, 7}, 7)};
  Graph after = optimized_copy(g, make_nchwc_layout(), inputs);
  auto counts = op_counts(after);
  EXPECT_EQ(counts["nchwc_conv"], 4);
  EXPECT_EQ(counts["conv2d"], 0);
  EXPECT_EQ(counts["to_nchwc"], 1);  // x
  PassContext dce;
  make_dead_code_elimination()->run(after, dce);
  EXPECT_EQ(op_counts(after)["from_nchwc"], 1);  // the graph output

  Graph lone;
  Value *lx = lone.add_input("x", {1, 16, 5, 5});
  lone.mark_output(lone.add_op("conv2d", {lx, constant(lone, "w", {24, 16, 1, 1}, 8)}, {}));
  run_pass(*make_nchwc_layout(), lone, /*changed=*/false);

  // Two 1x1 convs with no spatial conv between them stay too.
  Graph pointwise;
  Value *px = pointwise.add_input("x", {1, 16, 5, 5});
  Value *p1 = pointwise.add_op("conv2d", {px, constant(pointwise, "w1", {24, 16, 1, 1}, 9)}, {});
  pointwise.mark_output(
      pointwise.add_op("conv2d", {p1, constant(pointwise, "w2", {16, 24, 1, 1}, 10)}, {}));
  run_pass(*make_nchwc_layout(), pointwise, /*changed=*/false);
}

}  // namespace
}  // namespace lumen
