// fused_conv, fused_gemm, fused_matmul on the cpu and reference backends, each against the unfused
// sequence (conv2d/gemm/matmul, add, activation) run op by op on the reference backend, for every
// activation, with and without bias/residual; plus inference errors. Tolerances: float32 rtol/atol
// 1e-4 (BLAS sums in another order), float64 1e-10.
#include <string>
#include <vector>

#include "core/backend.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::expect_error;
using testing::random_tensor;

struct Activation {
  std::string name;  // "" for none
  Attributes params;
};

// Every activation the epilogue applies, with non-default parameters where it has some.
std::vector<Activation> all_activations() {
  return {
      {"", {}},
      {"relu", {}},
      {"leaky_relu", {{"alpha", 0.2}}},
      {"clip", {{"min", -0.3}, {"max", 0.4}}},
      {"sigmoid", {}},
      {"silu", {}},
      {"tanh", {}},
      {"gelu", {}},
      {"gelu", {{"approximate", std::string("tanh")}}},
      {"hard_swish", {}},
      {"hard_sigmoid", {{"alpha", 0.3}, {"beta", 0.4}}},
  };
}

// The fused node's attributes: the base op's plus "activation" and "activation_<param>".
Attributes with_activation(Attributes attrs, const Activation &act) {
  if (act.name.empty()) return attrs;
  attrs.set("activation", act.name);
  for (const auto &[key, value] : act.params.items()) attrs.set("activation_" + key, value);
  return attrs;
}

Tensor reference(const std::string &op, const std::vector<Tensor> &inputs,
                 const Attributes &attrs = {}) {
  return call_op(op, inputs, attrs, "reference").at(0);
}

// y = act(y + addend) with separate reference ops; an undefined addend adds nothing.
Tensor unfused_epilogue(Tensor y, const Tensor &addend, const Activation &act) {
  if (addend.defined()) y = reference("add", {y, addend});
  if (!act.name.empty()) y = reference(act.name, {y}, act.params);
  return y;
}

std::string describe(const std::string &label, const Activation &act, DType dtype) {
  return label + ", activation '" + act.name + "' " + act.params.to_string() + ", " +
         std::string(dtype_name(dtype));
}

// Runs `fused_op` on both backends and compares it with `expected`.
// Every backend with a kernel for the op and dtype (the cpu backend leaves float64 convs to the
// reference backend).
void expect_fused(const std::string &fused_op, const std::vector<Tensor> &inputs,
                  const Attributes &attrs, const Tensor &expected, double tol) {
  for (const char *backend : {"reference", "cpu"}) {
    if (!get_backend(backend).supports(fused_op, inputs[0].dtype())) continue;
    const auto out = call_op(fused_op, inputs, attrs, backend);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(all_close(out[0], expected, tol, tol)) << "backend " << backend;
  }
}

double tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-10 : 1e-4;
}

// --- fused_conv --------------------------------------------------------------------------------

struct ConvCase {
  std::string label;
  Shape x, w;
  Attributes attrs;
  bool every_activation = true;  // big cases only try a few
};

std::vector<ConvCase> conv_cases() {
  using Ints = std::vector<int64_t>;
  return {
      {"3x3 padded", {1, 3, 7, 6}, {4, 3, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}},
      {"batch 2 (one item per thread)", {2, 4, 6, 6}, {6, 4, 3, 3}, {}},
      {"grouped", {2, 4, 6, 5}, {6, 2, 3, 3}, {{"group", int64_t{2}}, {"pads", Ints{1, 0, 1, 0}}}},
      {"depthwise",
       {1, 4, 7, 7},
       {4, 1, 3, 3},
       {{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"depthwise multiplier 2", {2, 3, 5, 5}, {6, 1, 3, 3}, {{"group", int64_t{3}}}},
      {"strided dilated",
       {1, 3, 11, 9},
       {5, 3, 3, 2},
       {{"strides", Ints{2, 2}}, {"dilations", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}}},
      {"pointwise 1x1", {2, 8, 5, 5}, {4, 8, 1, 1}, {}},
      // 256 output channels over a 20x20 plane: several column blocks per GEMM.
      {"several epilogue blocks",
       {1, 8, 20, 20},
       {256, 8, 3, 3},
       {{"pads", Ints{1, 1, 1, 1}}},
       false},
  };
}

void check_conv(const ConvCase &c, DType dtype) {
  const Tensor x = random_tensor(c.x, 1, -1, 1, dtype);
  const Tensor w = random_tensor(c.w, 2, -1, 1, dtype);
  const Tensor b = random_tensor({c.w[0]}, 3, -1, 1, dtype);
  const Tensor conv_b = reference("conv2d", {x, w, b}, c.attrs);
  const Tensor conv = reference("conv2d", {x, w}, c.attrs);
  const Tensor z = random_tensor(conv.shape(), 4, -1, 1, dtype);
  auto activations = all_activations();
  if (!c.every_activation) activations = {activations[1], activations[8]};
  for (const Activation &act : activations) {
    const Attributes attrs = with_activation(c.attrs, act);
    SCOPED_TRACE(describe(c.label, act, dtype));
    {
      SCOPED_TRACE("no bias, no residual");
      expect_fused("fused_conv", {x, w}, attrs, unfused_epilogue(conv, Tensor(), act),
                   tolerance(dtype));
    }
    {
      SCOPED_TRACE("bias");
      expect_fused("fused_conv", {x, w, b}, attrs, unfused_epilogue(conv_b, Tensor(), act),
                   tolerance(dtype));
    }
    {
      SCOPED_TRACE("residual");
      expect_fused("fused_conv", {x, w, Tensor(), z}, attrs, unfused_epilogue(conv, z, act),
                   tolerance(dtype));
    }
    {
      SCOPED_TRACE("bias and residual");
      expect_fused("fused_conv", {x, w, b, z}, attrs, unfused_epilogue(conv_b, z, act),
                   tolerance(dtype));
    }
  }
}

TEST(FusedConvOp, MatchesUnfusedFloat32) {
  for (const ConvCase &c : conv_cases()) check_conv(c, DType::Float32);
}

TEST(FusedConvOp, MatchesUnfusedFloat64) {
  for (const ConvCase &c : conv_cases())
    if (c.every_activation) check_conv(c, DType::Float64);
}

TEST(FusedConvOp, HandComputedReluResidual) {
  // 1x1 conv scaling by 2, bias -1, residual then relu: max(2x - 1 + z, 0).
  const Tensor x = Tensor::from_vector<float>({1, 1, 1, 4}, {1, 2, -3, 0.25f});
  const Tensor w = Tensor::from_vector<float>({1, 1, 1, 1}, {2});
  const Tensor b = Tensor::from_vector<float>({1}, {-1});
  const Tensor z = Tensor::from_vector<float>({1, 1, 1, 4}, {0, -4, 10, 0});
  expect_fused("fused_conv", {x, w, b, z}, {{"activation", std::string("relu")}},
               Tensor::from_vector<float>({1, 1, 1, 4}, {1, 0, 3, 0}), 1e-6);
}

// --- fused_matmul ------------------------------------------------------------------------------

struct MatmulCase {
  std::string label;
  Shape a, b;
  bool every_activation = true;
};

std::vector<MatmulCase> matmul_cases() {
  return {
      {"2-D", {5, 7}, {7, 3}},
      {"batched A, shared B (one tall GEMM)", {2, 3, 5, 7}, {7, 4}},
      {"broadcast batches", {2, 1, 5, 7}, {3, 7, 4}},
      {"1-D A", {7}, {7, 4}},
      // 200 rows of 1024: several epilogue row blocks, split over the pool.
      {"several epilogue blocks", {200, 32}, {32, 1024}, false},
      {"batched, several blocks each", {3, 100, 16}, {3, 16, 1024}, false},
  };
}

void check_matmul(const MatmulCase &c, DType dtype) {
  const Tensor a = random_tensor(c.a, 11, -1, 1, dtype);
  const Tensor b = random_tensor(c.b, 12, -1, 1, dtype);
  const Tensor product = reference("matmul", {a, b});
  const Tensor bias =
      random_tensor({product.shape()[product.shape().rank() - 1]}, 13, -1, 1, dtype);
  auto activations = all_activations();
  if (!c.every_activation) activations = {activations[0], activations[5]};
  for (const Activation &act : activations) {
    const Attributes attrs = with_activation({}, act);
    SCOPED_TRACE(describe(c.label, act, dtype));
    {
      SCOPED_TRACE("no bias");
      expect_fused("fused_matmul", {a, b}, attrs, unfused_epilogue(product, Tensor(), act),
                   tolerance(dtype));
    }
    {
      SCOPED_TRACE("bias");
      expect_fused("fused_matmul", {a, b, bias}, attrs, unfused_epilogue(product, bias, act),
                   tolerance(dtype));
    }
  }
}

TEST(FusedMatmulOp, MatchesUnfusedFloat32) {
  for (const MatmulCase &c : matmul_cases()) check_matmul(c, DType::Float32);
}

TEST(FusedMatmulOp, MatchesUnfusedFloat64) {
  for (const MatmulCase &c : matmul_cases())
    if (c.every_activation) check_matmul(c, DType::Float64);
}

// --- fused_gemm --------------------------------------------------------------------------------

struct GemmCase {
  std::string label;
  Shape a, b;
  std::optional<Shape> c;
  Attributes attrs;
};

std::vector<GemmCase> gemm_cases() {
  return {
      {"plain", {4, 6}, {6, 5}, std::nullopt, {}},
      {"C [N]", {4, 6}, {6, 5}, Shape{5}, {}},
      {"C [M, 1], alpha, beta", {4, 6}, {6, 5}, Shape{4, 1}, {{"alpha", 0.5}, {"beta", -2.0}}},
      {"C scalar", {4, 6}, {6, 5}, Shape{}, {}},
      {"transA, C [M, N]", {6, 4}, {6, 5}, Shape{4, 5}, {{"transA", int64_t{1}}}},
      {"transB", {4, 6}, {5, 6}, Shape{1, 5}, {{"transB", int64_t{1}}}},
      {"transA and transB",
       {6, 4},
       {5, 6},
       Shape{5},
       {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 1.5}}},
      {"several epilogue blocks", {300, 24}, {24, 1024}, Shape{1024}, {}},
  };
}

void check_gemm(const GemmCase &c, DType dtype) {
  const Tensor a = random_tensor(c.a, 21, -1, 1, dtype);
  const Tensor b = random_tensor(c.b, 22, -1, 1, dtype);
  std::vector<Tensor> inputs = {a, b};
  if (c.c) inputs.push_back(random_tensor(*c.c, 23, -1, 1, dtype));
  const Tensor product = reference("gemm", inputs, c.attrs);
  for (const Activation &act : all_activations()) {
    SCOPED_TRACE(describe(c.label, act, dtype));
    expect_fused("fused_gemm", inputs, with_activation(c.attrs, act),
                 unfused_epilogue(product, Tensor(), act), tolerance(dtype));
  }
}

TEST(FusedGemmOp, MatchesUnfusedFloat32) {
  for (const GemmCase &c : gemm_cases()) check_gemm(c, DType::Float32);
}

TEST(FusedGemmOp, MatchesUnfusedFloat64) {
  for (const GemmCase &c : gemm_cases()) check_gemm(c, DType::Float64);
}

// --- errors ------------------------------------------------------------------------------------

TEST(FusedOpErrors, UnknownActivation) {
  const Tensor x = random_tensor({1, 2, 4, 4}, 1), w = random_tensor({3, 2, 3, 3}, 2);
  for (const char *backend : {"reference", "cpu"})
    expect_error(
        [&] {
          call_op("fused_conv", {x, w}, {{"activation", std::string("swish")}}, backend);
        },
        {"fused_conv", "unknown activation 'swish'", "relu"});
  Graph g;
  Value *a = g.add_input("a", {2, 3}), *b = g.add_input("b", {3, 4});
  expect_error(
      [&] {
        g.add_op("fused_gemm", {a, b}, {{"activation", std::string("elu")}}, "fg");
      },
      {"fused_gemm", "'fg'", "unknown activation 'elu'"});
}

TEST(FusedOpErrors, ParameterOfAnotherActivation) {
  Graph g;
  Value *a = g.add_input("a", {2, 3}), *b = g.add_input("b", {3, 4});
  expect_error(
      [&] {
        g.add_op("fused_matmul", {a, b},
                 {{"activation", std::string("relu")}, {"activation_alpha", 0.1}}, "fm");
      },
      {"fused_matmul", "'fm'", "activation_alpha", "relu"});
  expect_error(
      [&] {
        g.add_op(
            "fused_matmul", {a, b},
            {{"activation", std::string("gelu")}, {"activation_approximate", std::string("x")}});
      },
      "activation_approximate");
}

TEST(FusedOpErrors, ResidualOfWrongShape) {
  Graph g;
  Value *x = g.add_input("x", {1, 2, 5, 5});
  Value *w = g.add_weight("w", {3, 2, 3, 3});
  // The conv output is [1, 3, 3, 3]; a broadcastable [1, 3, 1, 1] is still rejected.
  for (const Shape &bad : {Shape{1, 3, 1, 1}, Shape{1, 3, 3, 4}, Shape{3, 3, 3}}) {
    Value *z = g.add_input(g.fresh_name("z"), bad);
    expect_error(
        [&] {
          g.add_op("fused_conv", {x, w, nullptr, z}, {}, "fc");
        },
        {"fused_conv", "'fc'", "residual z", "[1, 3, 3, 3]", bad.to_string()});
  }
  Value *z64 = g.add_input("z64", {1, 3, 3, 3}, DType::Float64);
  expect_error(
      [&] {
        g.add_op("fused_conv", {x, w, nullptr, z64}, {}, "fc");
      },
      {"residual z", "float64"});
}

TEST(FusedOpErrors, BiasOfWrongShape) {
  Graph g;
  Value *a = g.add_input("a", {2, 5, 3}), *b = g.add_input("b", {3, 4});
  Value *bias = g.add_input("bias", {5});
  expect_error(
      [&] {
        g.add_op("fused_matmul", {a, b, bias}, {}, "fm");
      },
      {"fused_matmul", "'fm'", "bias must have shape [4]"});
  Value *int_a = g.add_input("ia", {2, 3}, DType::Int32);
  Value *int_b = g.add_input("ib", {3, 4}, DType::Int32);
  expect_error([&] { g.add_op("fused_gemm", {int_a, int_b}); }, "float32 or float64");
}

TEST(FusedOpErrors, ConvChecksStillApply) {
  // The conv2d inference runs under the fused op's name.
  Graph g;
  Value *x = g.add_input("x", {1, 3, 5, 5});
  Value *w = g.add_weight("w", {4, 2, 3, 3});
  expect_error([&] { g.add_op("fused_conv", {x, w}, {}, "fc"); }, {"fused_conv", "'fc'"});
}

}  // namespace
}  // namespace lumen
