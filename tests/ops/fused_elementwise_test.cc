// fused_elementwise: the cpu and reference kernels against each other and against the chain of
// standalone ops it replaces, for every step kind, scalar and full-shape operands, the
// running-on-the-right flag, and the encoding errors inference reports.
#include <limits>

#include "graph/ops/fused_elementwise_steps.h"
#include "op_test_util.h"

namespace lumen::testing {
namespace {

using Strings = std::vector<std::string>;
using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;

Tensor scalar_tensor(float v, const Shape &shape = Shape{}) {
  return Tensor::from_vector<float>(shape, std::vector<float>(size_t(shape.numel()), v));
}

// Runs fused_elementwise on both backends; checks they agree and returns the reference result.
Tensor run_fused(const std::vector<Tensor> &inputs, const Attributes &attrs) {
  EXPECT_TRUE(cpu_matches_reference("fused_elementwise", inputs, attrs, 1e-6, 1e-6));
  return call_op("fused_elementwise", inputs, attrs, "reference")[0];
}

TEST(FusedElementwise, MatchesTheUnfusedChain) {
  // 3 x 700 elements: several cpu blocks plus a partial one.
  const Tensor x = random_tensor({3, 700}, 1, -2, 2);
  const Tensor full = random_tensor({3, 700}, 2, 0.5, 2);
  const Tensor half = scalar_tensor(0.5f, Shape{1, 1});
  const Tensor three = scalar_tensor(3.0f);
  const Attributes attrs = {
      {"ops", Strings{"mul", "add", "leaky_relu", "sub", "clip", "div", "gelu", "maximum"}},
      {"operands", Ints{1, 2, -1, 3, -1, 2, -1, 0}},
      {"running_right", Ints{0, 0, 0, 1, 0, 1, 0, 0}},
      {"params", Floats{0, 0, 0, 0, 0.2, 0, 0, 0, -1.5, 2.5, 0, 0, 1, 0, 0, 0}}};
  const Tensor got = run_fused({x, half, full, three}, attrs);

  const std::string ref = "reference";
  Tensor v = call_op("mul", {x, half}, {}, ref)[0];
  v = call_op("add", {v, full}, {}, ref)[0];
  v = call_op("leaky_relu", {v}, {{"alpha", 0.2}}, ref)[0];
  v = call_op("sub", {three, v}, {}, ref)[0];
  v = call_op("clip", {v}, {{"min", -1.5}, {"max", 2.5}}, ref)[0];
  v = call_op("div", {full, v}, {}, ref)[0];
  v = call_op("gelu", {v}, {{"approximate", std::string("tanh")}}, ref)[0];
  v = call_op("maximum", {v, x}, {}, ref)[0];
  // `half` is [1, 1], so the unfused chain's shape grows to rank 2 like x's: same shape.
  EXPECT_TRUE(all_close(got, v, 0, 0));
}

TEST(FusedElementwise, EveryUnaryStepMatchesItsOp) {
  const Tensor x = random_tensor({1000}, 3, -3, 3);
  const Tensor positive = random_tensor({1000}, 4, 0.05, 3);
  for (const fused::StepInfo &info : fused::kStepCatalog) {
    if (info.binary) continue;
    SCOPED_TRACE(std::string(info.op));
    const bool needs_positive = info.op == "log" || info.op == "sqrt";
    const Tensor &in = needs_positive ? positive : x;
    // No params attribute: each step takes its op's defaults.
    const Tensor got =
        run_fused({in}, {{"ops", Strings{std::string(info.op)}}, {"operands", Ints{-1}}});
    EXPECT_TRUE(all_close(got, call_op(std::string(info.op), {in}, {}, "reference")[0], 0, 0));
  }
}

TEST(FusedElementwise, BinaryStepsWithScalarAndFullOperandsOnEitherSide) {
  const Tensor x = random_tensor({2, 3, 129}, 5, 0.5, 2);
  const Tensor full = random_tensor({2, 3, 129}, 6, 0.5, 2);
  const Tensor scalar = scalar_tensor(1.75f, Shape{1});
  for (const char *op : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
    for (const Tensor *other : {&full, &scalar}) {
      for (int64_t right : {0, 1}) {
        SCOPED_TRACE(str(op, other == &full ? " full" : " scalar", right ? " right" : " left"));
        const Attributes attrs = {
            {"ops", Strings{op}}, {"operands", Ints{1}}, {"running_right", Ints{right}}};
        const Tensor got = run_fused({x, *other}, attrs);
        const auto expected = right ? call_op(op, {*other, x}, {}, "reference")[0]
                                    : call_op(op, {x, *other}, {}, "reference")[0];
        EXPECT_TRUE(all_close(got, expected, 0, 0));
      }
    }
  }
}

TEST(FusedElementwise, RunningRightChangesNonCommutativeResults) {
  const Tensor x = Tensor::from_vector<float>({3}, {1, 2, 4});
  const Tensor eight = scalar_tensor(8.0f);
  const Tensor got = run_fused(
      {x, eight},
      {{"ops", Strings{"div", "sub"}}, {"operands", Ints{1, 1}}, {"running_right", Ints{1, 0}}});
  // (8 / x) - 8
  EXPECT_TRUE(all_close(got, Tensor::from_vector<float>({3}, {0, -4, -6}), 0, 0));
}

TEST(FusedElementwise, Float64AndEmptyTensors) {
  const Tensor x = random_tensor({777}, 7, -2, 2, DType::Float64);
  const Tensor y = random_tensor({777}, 8, -2, 2, DType::Float64);
  const Attributes attrs = {{"ops", Strings{"sigmoid", "mul", "softplus", "erf"}},
                            {"operands", Ints{-1, 1, -1, -1}}};
  const Tensor got = run_fused({x, y}, attrs);
  Tensor v = call_op("sigmoid", {x}, {}, "reference")[0];
  v = call_op("mul", {v, y}, {}, "reference")[0];
  v = call_op("softplus", {v}, {}, "reference")[0];
  v = call_op("erf", {v}, {}, "reference")[0];
  EXPECT_TRUE(all_close(got, v, 0, 0));

  const Tensor empty = Tensor::empty({0, 4});
  const Tensor out =
      run_fused({empty}, {{"ops", Strings{"relu", "exp"}}, {"operands", Ints{-1, -1}}});
  EXPECT_EQ(out.shape(), (Shape{0, 4}));
}

TEST(FusedElementwise, RejectsBadEncodings) {
  const Tensor x = random_tensor({2, 3}, 9);
  const Tensor one = scalar_tensor(1.0f);
  auto run = [&](const std::vector<Tensor> &inputs, const Attributes &attrs) {
    return [inputs, attrs] { call_op("fused_elementwise", inputs, attrs, "reference"); };
  };
  const std::string op = "op 'fused_elementwise'";
  expect_error(run({x}, {{"operands", Ints{-1}}}), {op, "attribute ops is required"});
  expect_error(run({x}, {{"ops", Strings{"softmax"}}, {"operands", Ints{-1}}}),
               {op, "'softmax' is not an element-wise op"});
  expect_error(run({x, one}, {{"ops", Strings{"relu", "add"}}, {"operands", Ints{-1}}}),
               {op, "operands must hold one entry per step (2)"});
  expect_error(run({x, one}, {{"ops", Strings{"add"}}, {"operands", Ints{2}}}),
               {op, "step 0 (add): operand 2 is not an input index"});
  expect_error(run({x}, {{"ops", Strings{"relu"}}, {"operands", Ints{0}}}),
               {op, "step 0 (relu) is unary"});
  expect_error(
      run({x}, {{"ops", Strings{"exp"}}, {"operands", Ints{-1}}, {"running_right", Ints{1}}}),
      {op, "running_right must be 0"});
  expect_error(
      run({x}, {{"ops", Strings{"gelu"}}, {"operands", Ints{-1}}, {"params", Floats{2, 0}}}),
      {op, "gelu"});
  expect_error(run({x}, {{"ops", Strings{"relu"}}, {"operands", Ints{-1}}, {"params", Floats{0}}}),
               {op, "params must hold two entries per step"});
  // Operands hold one element or x0's exact shape: no broadcasting.
  expect_error(run({x, random_tensor({3}, 10)}, {{"ops", Strings{"add"}}, {"operands", Ints{1}}}),
               {op, "input 1 has shape [3]"});
  expect_error(run({x, scalar_tensor(1.0f, Shape{1, 1, 1})},
                   {{"ops", Strings{"add"}}, {"operands", Ints{1}}}),
               {op, "input 1 has shape [1, 1, 1]"});
  expect_error(run({x, random_tensor({2, 3}, 11, -1, 1, DType::Float64)},
                   {{"ops", Strings{"add"}}, {"operands", Ints{1}}}),
               {op, "input 1 has dtype float64"});
  expect_error(run({random_tensor({2}, 12, 0, 5, DType::Int32)},
                   {{"ops", Strings{"relu"}}, {"operands", Ints{-1}}}),
               {op, "float32 or float64"});
}

}  // namespace
}  // namespace lumen::testing
