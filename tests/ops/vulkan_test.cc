// The Vulkan backend's kernels against the reference backend, one table of cases that must cover
// every (op, dtype) the backend registers; a pinned graph, a mixed graph (the router splits it
// between Vulkan and the CPU when the cost cache says Vulkan is fast) and a 2048 x 2048 MatMul.
// Every test skips with the reason where no Vulkan device exists (LUMEN_VULKAN=0, no driver). In
// CI they run on Mesa's lavapipe. Tolerances: 1e-5 relative + 1e-5 absolute for element-wise and
// movement ops, 1e-4 for reductions over rows (softmax, layer_norm: other summation orders),
// 1e-4 relative + 1e-3 absolute for MatMul/Gemm/conv over up to ~600 terms.
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "compile/cost_model.h"
#include "core/backend.h"
#include "core/thread_pool.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::random_tensor;

bool vulkan_here(std::string &why_not) {
  Backend *b = find_backend("vulkan");
  if (!b) {
    why_not =
        "Lumen was built without the Vulkan backend (LUMEN_WITH_VULKAN, libvulkan-dev, glslc)";
    return false;
  }
  return b->available(&why_not);
}

#define SKIP_WITHOUT_VULKAN()                                                   \
  do {                                                                          \
    std::string why_not;                                                        \
    if (!vulkan_here(why_not)) GTEST_SKIP() << "no Vulkan device: " << why_not; \
  } while (0)

struct Case {
  std::string op;
  std::vector<Tensor> inputs;
  Attributes attrs = {};
  double rtol = 1e-5, atol = 1e-5;
};

Tensor ints(const Shape &shape, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(shape, v);
}
Tensor scalar(float v) {
  return Tensor::from_vector<float>({}, {v});
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const auto r = [](const Shape &s, uint64_t seed, double lo = -2, double hi = 2) {
    return random_tensor(s, seed, lo, hi);
  };
  for (const char *op : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
    c.push_back({op, {r({2, 3, 4}, 1), r({4}, 2, 0.5, 2)}});
    c.push_back({op, {r({2, 1, 4}, 3), r({3, 1}, 4, 0.5, 2)}});
    c.push_back({op, {r({5, 7}, 5), scalar(1.5f)}});
    c.push_back({op, {r({2, 3, 4, 5, 6, 7, 2}, 6), r({1, 3, 1, 5, 1, 7, 1}, 7, 0.5, 2)}});
  }
  c.push_back({"pow", {r({3, 4}, 11, 0.1, 3), r({4}, 12)}});
  c.push_back(
      {"pow", {r({3, 4}, 13, -3, 3), Tensor::from_vector<float>({1}, {3})}, {}, 1e-5, 1e-4});
  for (const char *op :
       {"relu", "sigmoid", "tanh", "silu", "softplus", "hard_swish", "exp", "neg", "abs"})
    c.push_back({op, {r({3, 50}, 20, -6, 6)}});
  c.push_back({"log", {r({3, 50}, 21, 0.01, 5)}});
  c.push_back({"sqrt", {r({3, 50}, 22, 0, 5)}});
  c.push_back({"gelu", {r({3, 50}, 23, -5, 5)}});
  c.push_back({"gelu", {r({3, 50}, 24, -5, 5)}, Attributes{{"approximate", "tanh"}}});
  c.push_back({"leaky_relu", {r({3, 50}, 25)}, Attributes{{"alpha", 0.3}}});
  c.push_back({"elu", {r({3, 50}, 26)}, Attributes{{"alpha", 0.7}}});
  c.push_back(
      {"hard_sigmoid", {r({3, 50}, 27, -6, 6)}, Attributes{{"alpha", 0.25}, {"beta", 0.4}}});
  c.push_back({"clip", {r({3, 50}, 28)}, Attributes{{"min", -0.5}, {"max", 0.75}}});
  c.push_back({"clip", {r({3, 50}, 29)}, Attributes{{"max", 0.25}}});
  c.push_back({"erf", {r({3, 50}, 19, -3, 3)}});

  // fused_elementwise: a short chain (one dispatch), and 30 steps over 8 inputs that split into
  // several dispatches by their steps, parameters and operands (input 0 read again late).
  c.push_back({"fused_elementwise",
               {r({3, 50}, 14), r({3, 50}, 15), scalar(0.75f)},
               Attributes{{"ops", std::vector<std::string>{"add", "relu", "sub", "gelu", "mul"}},
                          {"operands", std::vector<int64_t>{1, -1, 2, -1, 0}},
                          {"running_right", std::vector<int64_t>{0, 0, 1, 0, 0}}},
               1e-5,
               1e-5});
  {
    struct Step {
      const char *op;
      int64_t operand = -1;
      int64_t right = 0;  // the running value on the right
    };
    const std::vector<Step> steps = {
        {"add", 1},   {"relu"},   {"mul", 2, 1},  {"sigmoid"},    {"sub", 3, 1},     {"tanh"},
        {"div", 4},   {"exp"},    {"log"},        {"abs"},        {"sqrt"},          {"neg"},
        {"silu"},     {"gelu"},   {"leaky_relu"}, {"clip"},       {"hard_sigmoid"},  {"hard_swish"},
        {"softplus"}, {"elu"},    {"erf"},        {"maximum", 5}, {"minimum", 6, 1}, {"add", 0},
        {"gelu"},     {"mul", 7}, {"sub", 1, 1},  {"leaky_relu"}, {"clip"},          {"elu"}};
    std::vector<std::string> ops;
    std::vector<int64_t> operands, right;
    std::vector<double> params;
    for (size_t i = 0; i < steps.size(); ++i) {
      ops.emplace_back(steps[i].op);
      operands.push_back(steps[i].operand);
      right.push_back(steps[i].right);
      const std::string op = steps[i].op;
      if (op == "clip")
        params.insert(params.end(), {-0.7 + 0.1 * double(i % 2), 0.9});
      else if (op == "gelu")
        params.insert(params.end(), {i > 20 ? 1.0 : 0.0, 0});
      else
        params.insert(params.end(), {0.1 + 0.01 * double(i), 0.4});
    }
    c.push_back(
        {"fused_elementwise",
         {r({4, 33}, 16), r({4, 33}, 17), r({4, 33}, 18), scalar(0.3f), r({4, 33}, 115, 0.5, 2),
          r({4, 33}, 116), scalar(-0.2f), r({4, 33}, 117)},
         Attributes{
             {"ops", ops}, {"operands", operands}, {"running_right", right}, {"params", params}},
         1e-4,
         1e-4});
  }

  const double mm_rtol = 1e-4, mm_atol = 1e-3;
  c.push_back({"matmul", {r({64, 70}, 30), r({70, 33}, 31)}, {}, mm_rtol, mm_atol});
  c.push_back({"matmul", {r({2, 3, 17, 9}, 32), r({2, 3, 9, 20}, 33)}, {}, mm_rtol, mm_atol});
  c.push_back({"matmul", {r({2, 1, 5, 6}, 34), r({3, 6, 7}, 35)}, {}, mm_rtol, mm_atol});
  c.push_back({"matmul", {r({6}, 36), r({6, 4}, 37)}, {}, mm_rtol, mm_atol});
  c.push_back({"matmul", {r({3, 5, 6}, 38), r({6}, 39)}, {}, mm_rtol, mm_atol});
  c.push_back({"matmul", {r({130, 300}, 40), r({300, 70}, 41)}, {}, mm_rtol, mm_atol});
  c.push_back(
      {"matmul", {r({2, 3, 4, 5, 6, 7}, 55), r({3, 1, 5, 7, 2}, 56)}, {}, mm_rtol, mm_atol});
  c.push_back({"gemm", {r({3, 0}, 57), r({0, 4}, 58), r({4}, 59)}, {}, mm_rtol, mm_atol});
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const Shape a = ta ? Shape{20, 70} : Shape{70, 20}, b = tb ? Shape{90, 20} : Shape{20, 90};
      const Attributes attrs = Attributes{{"transA", int64_t(ta)}, {"transB", int64_t(tb)}};
      c.push_back({"gemm", {r(a, 42), r(b, 43), r({90}, 44)}, attrs, mm_rtol, mm_atol});
    }
  c.push_back({"gemm",
               {r({70, 20}, 45), r({20, 90}, 46), r({70, 1}, 47)},
               Attributes{{"alpha", 0.5}, {"beta", 2.0}},
               mm_rtol,
               mm_atol});
  c.push_back({"gemm", {r({70, 20}, 48), r({20, 90}, 49), r({70, 90}, 50)}, {}, mm_rtol, mm_atol});
  c.push_back({"gemm", {r({7, 20}, 51), r({20, 9}, 52), scalar(0.25f)}, {}, mm_rtol, mm_atol});
  c.push_back({"gemm", {r({7, 20}, 53), r({20, 9}, 54)}, {}, mm_rtol, mm_atol});

  for (int64_t axis : {0, 1, -1}) {
    c.push_back({"softmax", {r({3, 40, 5}, 60, -5, 5)}, Attributes{{"axis", axis}}, 1e-4, 1e-6});
    c.push_back(
        {"log_softmax", {r({3, 40, 5}, 61, -5, 5)}, Attributes{{"axis", axis}}, 1e-4, 1e-5});
  }
  c.push_back({"softmax", {r({2, 1000}, 62, -5, 5)}, {}, 1e-4, 1e-6});
  c.push_back({"layer_norm",
               {r({4, 6, 96}, 63), r({96}, 64), r({96}, 65)},
               Attributes{{"epsilon", 1e-3}},
               1e-4,
               1e-4});
  c.push_back({"layer_norm",
               {r({4, 6, 40}, 66), r({6, 40}, 67)},
               Attributes{{"axis", int64_t{-2}}},
               1e-4,
               1e-4});
  c.push_back({"layer_norm", {r({5, 700}, 68), scalar(1.5f), scalar(-0.5f)}, {}, 1e-4, 1e-4});

  const double conv_rtol = 1e-4, conv_atol = 1e-4;
  c.push_back({"conv2d",
               {r({1, 3, 9, 11}, 70), r({4, 3, 3, 3}, 71), r({4}, 72)},
               Attributes{{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
               conv_rtol,
               conv_atol});
  c.push_back({"conv2d",
               {r({2, 4, 12, 12}, 73), r({6, 2, 3, 3}, 74)},
               Attributes{{"strides", std::vector<int64_t>{2, 2}},
                          {"dilations", std::vector<int64_t>{2, 2}},
                          {"group", int64_t{2}}},
               conv_rtol,
               conv_atol});
  c.push_back({"conv2d",
               {r({1, 8, 7, 7}, 75), r({8, 1, 5, 5}, 76), r({8}, 77)},
               Attributes{{"pads", std::vector<int64_t>{2, 1, 0, 2}}, {"group", int64_t{8}}},
               conv_rtol,
               conv_atol});
  // Wide groups: the implicit GEMM (several 64x64 tiles, padding, strides, groups, bias).
  c.push_back({"conv2d",
               {r({2, 16, 10, 9}, 86), r({80, 16, 3, 3}, 87), r({80}, 88)},
               Attributes{{"pads", std::vector<int64_t>{1, 0, 1, 2}},
                          {"strides", std::vector<int64_t>{2, 1}}},
               conv_rtol,
               conv_atol});
  c.push_back({"conv2d",
               {r({1, 32, 11, 11}, 89), r({32, 16, 3, 3}, 90)},
               Attributes{{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{2, 1}}},
               conv_rtol,
               conv_atol});
  c.push_back({"conv2d",
               {r({1, 32, 12, 12}, 91), r({64, 32, 1, 1}, 92), r({64}, 93)},
               {},
               conv_rtol,
               conv_atol});
  // fused_conv's epilogue: bias, residual and an activation with parameters, on the direct path
  // (depthwise) and the implicit GEMM (1x1, 64 channels).
  c.push_back({"fused_conv",
               {r({1, 8, 7, 7}, 130), r({8, 1, 3, 3}, 131), r({8}, 132), r({1, 8, 7, 7}, 133)},
               Attributes{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                          {"group", int64_t{8}},
                          {"activation", "leaky_relu"},
                          {"activation_alpha", 0.2}},
               conv_rtol,
               conv_atol});
  c.push_back(
      {"fused_conv",
       {r({1, 32, 12, 12}, 134), r({64, 32, 1, 1}, 135), r({64}, 136), r({1, 64, 12, 12}, 137)},
       Attributes{{"activation", "clip"}, {"activation_min", -0.5}, {"activation_max", 0.8}},
       conv_rtol,
       conv_atol});
  c.push_back({"fused_conv",
               {r({2, 16, 10, 9}, 138), r({80, 16, 3, 3}, 139)},
               Attributes{{"strides", std::vector<int64_t>{2, 1}},
                          {"activation", "gelu"},
                          {"activation_approximate", "tanh"}},
               conv_rtol,
               conv_atol});
  c.push_back({"fused_gemm",
               {r({70, 20}, 140), r({90, 20}, 141), r({90}, 142)},
               Attributes{{"transB", int64_t{1}}, {"alpha", 0.5}, {"activation", "sigmoid"}},
               mm_rtol,
               mm_atol});
  c.push_back(
      {"fused_matmul",
       {r({2, 3, 17, 9}, 143), r({9, 20}, 144), r({20}, 145)},
       Attributes{
           {"activation", "hard_sigmoid"}, {"activation_alpha", 0.3}, {"activation_beta", 0.45}},
       mm_rtol,
       mm_atol});
  c.push_back({"fused_matmul", {r({5, 9}, 146), r({9, 7}, 147)}, {}, mm_rtol, mm_atol});
  // resize (tests/ops/resize_test.cc runs every mode on Vulkan as well): two axes by scales, and
  // an identity (a plain copy).
  c.push_back({"resize",
               {r({1, 2, 5, 6}, 150), Tensor::empty({0}, DType::Float32),
                Tensor::from_vector<float>({4}, {1, 1, 1.6f, 0.5f})},
               Attributes{{"mode", "cubic"}, {"antialias", int64_t{1}}}});
  c.push_back({"resize",
               {r({2, 3, 4}, 151), Tensor::empty({0}, DType::Float32),
                Tensor::from_vector<float>({3}, {1, 1, 1})}});
  c.push_back({"max_pool2d",
               {r({2, 3, 9, 9}, 80)},
               Attributes{{"kernel_shape", std::vector<int64_t>{3, 3}},
                          {"strides", std::vector<int64_t>{2, 2}},
                          {"pads", std::vector<int64_t>{1, 1, 1, 1}}}});
  for (int64_t include : {0, 1})
    c.push_back({"avg_pool2d",
                 {r({2, 3, 8, 7}, 81)},
                 Attributes{{"kernel_shape", std::vector<int64_t>{3, 2}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                            {"count_include_pad", include}}});
  c.push_back({"lrn",
               {r({2, 7, 4, 5}, 84)},
               Attributes{{"size", int64_t{3}}, {"alpha", 0.02}, {"beta", 0.6}, {"bias", 1.5}},
               1e-5,
               1e-5});
  c.push_back({"lrn", {r({1, 6, 3, 3}, 85)}, Attributes{{"size", int64_t{4}}}});
  c.push_back({"global_avg_pool", {r({2, 5, 6, 7}, 82)}, {}, 1e-5, 1e-5});
  c.push_back({"global_max_pool", {r({2, 5, 6, 7}, 83)}});

  for (const char *op :
       {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
        "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"}) {
    const bool positive = std::string(op) == "reduce_log_sum";
    const double lo = positive ? 0.1 : -1.5, hi = 1.5;
    c.push_back({op, {r({3, 4, 5}, 110, lo, hi), ints({1}, {1})}, {}, 1e-4, 1e-5});
    c.push_back({op,
                 {r({3, 4, 5, 2}, 111, lo, hi), ints({2}, {0, -2})},
                 Attributes{{"keepdims", int64_t{0}}},
                 1e-4,
                 1e-5});
    c.push_back({op, {r({2, 300}, 112, lo, hi)}, {}, 1e-4, 1e-5});  // all axes, 600 terms
  }
  c.push_back({"reduce_sum",
               {r({3, 4}, 113), ints({0}, {})},
               Attributes{{"noop_with_empty_axes", int64_t{1}}}});
  c.push_back({"gather",
               {r({5, 4, 3}, 120), ints({2, 2}, {0, -1, 4, 2})},
               Attributes{{"axis", int64_t{0}}}});
  c.push_back({"gather",
               {r({5, 4, 3}, 121), Tensor::from_vector<int32_t>({3}, {3, 0, -2})},
               Attributes{{"axis", int64_t{1}}}});
  c.push_back({"gather", {r({30, 8}, 122), ints({}, {7})}});
  c.push_back({"reshape", {r({2, 3, 4}, 90), ints({2}, {4, 6})}});
  c.push_back({"constant_of_shape",
               {ints({2}, {3, 70})},
               Attributes{{"value", Tensor::from_vector<float>({1}, {2.5f})}}});
  c.push_back({"constant_of_shape",
               {ints({1}, {9})},
               Attributes{{"value", Tensor::from_vector<int64_t>({1}, {(int64_t{5} << 33) + 7})}}});
  c.push_back({"constant_of_shape", {Tensor::from_vector<int32_t>({2}, {2, 3})}});
  c.push_back({"flatten", {r({2, 3, 4}, 91)}, Attributes{{"axis", int64_t{2}}}});
  c.push_back({"squeeze", {r({2, 1, 4}, 92), ints({1}, {1})}});
  c.push_back({"unsqueeze", {r({2, 4}, 93), ints({1}, {0})}});
  c.push_back(
      {"transpose", {r({2, 3, 4, 5}, 94)}, Attributes{{"perm", std::vector<int64_t>{0, 2, 3, 1}}}});
  c.push_back({"concat",
               {r({2, 3, 4}, 95), r({2, 5, 4}, 96), r({2, 1, 4}, 97)},
               Attributes{{"axis", int64_t{1}}}});
  c.push_back({"expand", {r({3, 1}, 98), ints({3}, {2, 3, 4})}});
  c.push_back({"slice",
               {r({5, 6, 7}, 99), ints({2}, {1, -2}), ints({2}, {4, 0}), ints({2}, {0, 2}),
                ints({2}, {2, -2})}});
  c.push_back({"slice", {r({5, 6}, 100), ints({1}, {2}), ints({1}, {100})}});
  c.push_back({"slice",
               {r({5, 6}, 101).reshape({5, 6}), ints({1}, {-1}), ints({1}, {-100}), ints({1}, {1}),
                ints({1}, {-1})}});
  return c;
}

bool movement(const std::string &op) {
  for (const char *m : {"reshape", "flatten", "squeeze", "unsqueeze", "transpose", "concat",
                        "expand", "slice", "gather"})
    if (op == m) return true;
  return false;
}

// Float values times 1000, rounded, as int32 or int64 (distinct values, so a misplaced word shows).
Tensor as_ints(const Tensor &t, DType dtype) {
  Tensor out = Tensor::empty(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = std::llround(t.data<float>()[i] * 1000) + (int64_t{1} << 40) * (i % 3);
    if (dtype == DType::Int64)
      out.data<int64_t>()[i] = v;
    else
      out.data<int32_t>()[i] = static_cast<int32_t>(v % 1000000);
  }
  return out;
}

std::vector<std::string> step_placements(const Executable &exe) {
  std::vector<std::string> order;
  for (const StepInfo &s : exe.steps()) order.push_back(s.op + "@" + s.backend);
  return order;
}

// Runs `exe` (compiled from `g`) `runs` times on new random inputs of `shape`, each result
// against the CPU's (the run state and its recorded commands are reused across runs).
void expect_runs_match_cpu(const Graph &g, const Executable &exe, const Shape &shape, int runs,
                           double rtol = 1e-4, double atol = 1e-2) {
  Runtime cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *want = g.compile(&cpu);
  for (int run = 0; run < runs; ++run) {
    const Tensor in = random_tensor(shape, 100 + run);
    EXPECT_TRUE(all_close(exe.execute({in})[0], want->execute({in})[0], rtol, atol)) << run;
  }
}

TEST(Vulkan, EveryKernelMatchesTheReferenceAndHasACase) {
  SKIP_WITHOUT_VULKAN();
  std::set<std::pair<std::string, DType>> covered;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.op + " " + c.attrs.to_string());
    const auto expected = call_op(c.op, c.inputs, c.attrs, "reference");
    const auto actual = call_op(c.op, c.inputs, c.attrs, "vulkan");
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_TRUE(actual[i].device().is_host());
      EXPECT_TRUE(all_close(actual[i], expected[i], c.rtol, c.atol)) << "output " << i;
    }
    covered.insert({c.op, c.inputs[0].dtype()});
  }
  // Movement ops copy 32-bit words: every float32 case again on int32 data.
  for (const Case &c : cases()) {
    if (!movement(c.op) || c.inputs[0].dtype() != DType::Float32) continue;
    for (DType dtype : {DType::Int32}) {
      SCOPED_TRACE(c.op + " " + std::string(dtype_name(dtype)));
      std::vector<Tensor> inputs = c.inputs;
      for (Tensor &t : inputs)
        if (t.dtype() == DType::Float32) t = as_ints(t, dtype);
      const auto expected = call_op(c.op, inputs, c.attrs, "reference");
      const auto actual = call_op(c.op, inputs, c.attrs, "vulkan");
      EXPECT_TRUE(all_close(actual.at(0), expected.at(0), 0, 0));
      covered.insert({c.op, dtype});
    }
  }
  for (const auto &[op, dtype] : kernel_registry("vulkan").entries())
    EXPECT_TRUE(covered.count({op, dtype}))
        << "the Vulkan kernel (" << op << ", " << dtype_name(dtype) << ") has no case here";
}

// NaN and infinities go through the element-wise kernels as on the reference (GLSL's max, clamp
// and pow leave NaN undefined): every element-wise case again with specials in input 0.
TEST(Vulkan, SpecialValuesPropagateAsOnTheReference) {
  SKIP_WITHOUT_VULKAN();
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (Case c : cases()) {
    static const std::set<std::string> kElementwise = {
        "add",     "sub",      "mul",        "div",          "pow",
        "maximum", "minimum",  "relu",       "sigmoid",      "tanh",
        "silu",    "softplus", "hard_swish", "exp",          "neg",
        "abs",     "log",      "sqrt",       "gelu",         "leaky_relu",
        "elu",     "erf",      "clip",       "hard_sigmoid", "fused_elementwise"};
    if (!kElementwise.count(c.op) || c.inputs[0].numel() < 3) continue;
    SCOPED_TRACE(c.op + " " + c.attrs.to_string());
    Tensor x = c.inputs[0].contiguous();
    x.data<float>()[0] = nan;
    x.data<float>()[1] = inf;
    x.data<float>()[2] = -inf;
    c.inputs[0] = x;
    EXPECT_TRUE(all_close(call_op(c.op, c.inputs, c.attrs, "vulkan")[0],
                          call_op(c.op, c.inputs, c.attrs, "reference")[0], c.rtol, c.atol));
  }
}

// The reductions (softmax, layer_norm, reduce_*) have a variant with subgroup operations, run
// where the device has them: both variants against the reference (LUMEN_VULKAN_SUBGROUPS=0 forces
// the shared-memory one), with NaN among the inputs of the max/min reductions.
TEST(Vulkan, ReductionsAgreeWithAndWithoutSubgroups) {
  SKIP_WITHOUT_VULKAN();
  std::string old;
  if (const char *v = std::getenv("LUMEN_VULKAN_SUBGROUPS")) old = v;
  for (const char *subgroups : {"0", "1"}) {
    setenv("LUMEN_VULKAN_SUBGROUPS", subgroups, 1);
    for (Case c : cases()) {
      const bool reduction = c.op == "softmax" || c.op == "log_softmax" || c.op == "layer_norm" ||
                             c.op.rfind("reduce_", 0) == 0;
      if (!reduction) continue;
      SCOPED_TRACE(std::string("subgroups=") + subgroups + " " + c.op + " " + c.attrs.to_string());
      EXPECT_TRUE(all_close(call_op(c.op, c.inputs, c.attrs, "vulkan")[0],
                            call_op(c.op, c.inputs, c.attrs, "reference")[0], c.rtol, c.atol));
      if (c.op != "reduce_max" && c.op != "reduce_min") continue;
      Tensor x = c.inputs[0].contiguous();
      x.data<float>()[x.numel() - 1] = std::numeric_limits<float>::quiet_NaN();
      c.inputs[0] = x;
      EXPECT_TRUE(all_close(call_op(c.op, c.inputs, c.attrs, "vulkan")[0],
                            call_op(c.op, c.inputs, c.attrs, "reference")[0], c.rtol, c.atol))
          << "with a NaN";
    }
  }
  if (old.empty())
    unsetenv("LUMEN_VULKAN_SUBGROUPS");
  else
    setenv("LUMEN_VULKAN_SUBGROUPS", old.c_str(), 1);
}

TEST(Vulkan, GatherChecksItsIndicesOnTheHost) {
  SKIP_WITHOUT_VULKAN();
  testing::expect_error(
      [] {
        call_op("gather", {random_tensor({4, 3}, 1), ints({2}, {1, 4})}, {}, "vulkan");
      },
      "index 4 is out of range for dim 0 of size 4");
}

TEST(Vulkan, APinnedGraphListsWhatVulkanCannotRun) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {4, 4});
  g.mark_output(g.add_op("cumsum", {x, g.add_constant("axis", ints({}, {0}))}, {}, "running"));
  Runtime rt{RuntimeOptions{.backend = "vulkan"}};
  testing::expect_error([&] { g.compile(&rt); },
                        "backend 'vulkan' has no kernel for 1 node: 'running' (cumsum, float32)");
}

// A graph pinned to Vulkan: copies in and out only, the result the CPU's.
TEST(Vulkan, PinnedGraphRunsWithCopiesAtTheEdges) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {8, 32});
  Value *h = g.add_op("gemm", {x, g.add_constant("w1", random_tensor({32, 64}, 1)),
                               g.add_constant("b1", random_tensor({64}, 2))});
  h = g.add_op("relu", {h});
  h = g.add_op("matmul", {h, g.add_constant("w2", random_tensor({64, 10}, 3))});
  g.mark_output(g.add_op("softmax", {h}, Attributes{{"axis", int64_t{-1}}}));
  Runtime vk{RuntimeOptions{.backend = "vulkan"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *on_vulkan = g.compile(&vk);
  std::map<std::string, int> ops;
  for (const StepInfo &s : on_vulkan->steps()) ++ops[s.op == "copy" ? "copy" : s.backend];
  EXPECT_EQ(ops["vulkan"], 4);
  EXPECT_EQ(ops["copy"], 2);
  EXPECT_EQ(on_vulkan->memory().spaces.size(), 1u) << "every intermediate on vulkan:0";
  EXPECT_EQ(on_vulkan->memory().spaces[0].space, "vulkan:0");
  const Tensor in = random_tensor({8, 32}, 4);
  for (int run = 0; run < 3; ++run)  // the run state (arena, stream) is reused
    EXPECT_TRUE(
        all_close(on_vulkan->execute({in})[0], g.compile(&cpu)->execute({in})[0], 1e-4, 1e-5));
}

// Command buffers are recorded once and resubmitted (vulkan_stream.h): after the first run of a
// planned graph, runs record nothing and submit the recorded batch again, with the same results;
// new input values go through (the copy in is not part of the recording's identity).
TEST(Vulkan, PlannedRunsResubmitTheirRecordedCommands) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {16, 64});
  Value *h = g.add_op("matmul", {x, g.add_constant("w", random_tensor({64, 64}, 1))});
  h = g.add_op("add", {h, g.add_constant("b", random_tensor({64}, 2))});
  g.mark_output(g.add_op("softmax", {g.add_op("tanh", {h})}, Attributes{{"axis", int64_t{-1}}}));
  Runtime vk{RuntimeOptions{.backend = "vulkan"}};
  Executable *exe = g.compile(&vk);
  const auto counters = [] { return get_backend("vulkan").counters(); };
  exe->execute({random_tensor({16, 64}, 3)});  // records
  const auto before = counters();
  expect_runs_match_cpu(g, *exe, {16, 64}, 4, 1e-4, 1e-5);
  const auto after = counters();
  EXPECT_EQ(after.at("batches_recorded"), before.at("batches_recorded"));
  EXPECT_GE(after.at("batches_replayed") - before.at("batches_replayed"), 4u);
}

// An input already in Vulkan memory: a plan that reads it on the CPU and one that reads it on
// Vulkan both get its values (it is copied to the host first).
TEST(Vulkan, ExecuteTakesInputsInVulkanMemory) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {4, 8});
  g.mark_output(g.add_op("matmul", {x, g.add_constant("w", random_tensor({8, 3}, 1))}));
  const Tensor host = random_tensor({4, 8}, 2);
  Backend &vulkan = get_backend("vulkan");
  Tensor on_device = Tensor::empty({4, 8}, DType::Float32, &vulkan.allocator());
  vulkan.copy(on_device, host, nullptr);
  for (const char *backend : {"cpu", "vulkan"}) {
    Runtime rt{RuntimeOptions{.backend = backend}};
    Executable *exe = g.compile(&rt);
    EXPECT_TRUE(all_close(exe->execute({on_device})[0], exe->execute({host})[0], 0, 0)) << backend;
  }
}

TEST(Vulkan, LargeMatmul2048) {
  SKIP_WITHOUT_VULKAN();
  // Seconds on lavapipe: once per CI run, in the default-ISA pass of the plain build (the ISA
  // passes and the sanitized builds, where lavapipe is not instrumented anyway, skip it).
  if (std::getenv("LUMEN_CPU_ISA")) GTEST_SKIP() << "runs in the default-ISA pass";
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "runs in the unsanitized build";
#endif
#endif
  const Tensor a = random_tensor({2048, 2048}, 5), b = random_tensor({2048, 2048}, 6);
  const Tensor got = call_op("matmul", {a, b}, {}, "vulkan")[0];
  const Tensor want = call_op("matmul", {a, b}, {}, "cpu")[0];
  EXPECT_TRUE(all_close(got, want, 1e-3, 2e-3));
}

// A cost cache (in a directory of its own) that says Vulkan is 1000x the CPU, with a fast link,
// for as long as it lives: the router then puts whatever Vulkan can run on it.
class FastVulkanCache {
 public:
  explicit FastVulkanCache(Runtime &rt)
      : dir_(std::filesystem::temp_directory_path() /
             ("lumen_vulkan_fast_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir_);
    if (const char *v = std::getenv("LUMEN_CACHE_DIR")) old_ = v;
    setenv("LUMEN_CACHE_DIR", dir_.c_str(), 1);
    CostModel::instance().reset();
    std::ofstream out(dir_ / "device_costs.tsv");
    CostModel &m = CostModel::instance();
    out << m.key(get_backend("cpu"), rt.thread_pool()) << "\tprofile\t10\t5\t5\n"
        << m.key(get_backend("vulkan"), rt.thread_pool()) << "\tprofile\t10000\t500\t5\n"
        << m.key(get_backend("vulkan"), rt.thread_pool()) << "\tlink\t50\t5\n";
  }
  ~FastVulkanCache() {
    if (old_.empty())
      unsetenv("LUMEN_CACHE_DIR");
    else
      setenv("LUMEN_CACHE_DIR", old_.c_str(), 1);
    CostModel::instance().reset();
    std::filesystem::remove_all(dir_);
  }

 private:
  std::filesystem::path dir_;
  std::string old_;
};

// The router puts the GEMMs on Vulkan when the cost cache says it is fast, and cumsum (no Vulkan
// kernel) on the CPU, with copies exactly where values cross.
TEST(Vulkan, MixedGraphSplitsWithCopiesWhereValuesCross) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {256, 256});
  Value *h = g.add_op("matmul", {x, g.add_constant("w1", random_tensor({256, 256}, 1))}, {}, "mm1");
  h = g.add_op("cumsum", {h, g.add_constant("axis", ints({}, {1}))}, {}, "running");
  h = g.add_op("matmul", {h, g.add_constant("w2", random_tensor({256, 256}, 2))}, {}, "mm2");
  g.mark_output(h);
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"copy@vulkan", "matmul@vulkan", "copy@vulkan", "cumsum@cpu",
                                      "copy@vulkan", "matmul@vulkan", "copy@vulkan"}));
  expect_runs_match_cpu(g, *exe, {256, 256}, 1);
}

// A copy to Vulkan while Vulkan work is pending goes through a staging block, ordered on the
// stream after that work, without the host waiting for it: the CPU's cumsum of x is uploaded while
// the matmul of x is still recorded, not run; the add reads both.
TEST(Vulkan, AnUploadWhileWorkIsPendingIsOrderedOnTheStream) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {256, 256});
  Value *mm = g.add_op("matmul", {x, g.add_constant("w", random_tensor({256, 256}, 1))}, {}, "mm");
  Value *cs = g.add_op("cumsum", {x, g.add_constant("axis", ints({}, {1}))}, {}, "running");
  g.mark_output(g.add_op("add", {mm, cs}, {}, "sum"));
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"copy@vulkan", "matmul@vulkan", "cumsum@cpu", "copy@vulkan",
                                      "add@vulkan", "copy@vulkan"}));
  expect_runs_match_cpu(g, *exe, {256, 256}, 3);
}

// A plan compiled with input_device and output_device "vulkan" reads its inputs where the caller
// keeps them and leaves its outputs there: pinned to Vulkan, no copy step at all; the results
// (read back with to_device) are the CPU's. An input given in host memory is moved there first.
TEST(Vulkan, InputsAndOutputsStayInVulkanMemory) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {16, 32});
  Value *h = g.add_op("matmul", {x, g.add_constant("w", random_tensor({32, 8}, 1))});
  g.mark_output(
      g.add_op("tanh", {g.add_op("add", {h, g.add_constant("b", random_tensor({8}, 2))})}));
  Runtime vk{RuntimeOptions{.backend = "vulkan"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *exe =
      g.compile(&vk, CompileOptions{.input_device = "vulkan", .output_device = "vulkan"});
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"matmul@vulkan", "add@vulkan", "tanh@vulkan"}));
  Executable *want = g.compile(&cpu);
  for (int run = 0; run < 3; ++run) {
    const Tensor host = random_tensor({16, 32}, 10 + run);
    const Tensor on_device = to_device(host, "vulkan");
    EXPECT_EQ(on_device.device(), get_backend("vulkan").device());
    const Tensor out = exe->execute({on_device})[0];
    EXPECT_EQ(out.device(), get_backend("vulkan").device());
    const Tensor expected = want->execute({host})[0];
    EXPECT_TRUE(all_close(to_device(out, "cpu"), expected, 1e-4, 1e-5)) << run;
    EXPECT_TRUE(all_close(to_device(exe->execute({host})[0], "cpu"), expected, 1e-4, 1e-5));
  }
  testing::expect_error([&] { g.compile(&vk, CompileOptions{.output_device = "nowhere"}); },
                        "nowhere");
}

// Inputs and outputs in Vulkan memory while the router splits the graph: the matmul reads the
// input where it is, its result crosses to the CPU (cumsum) and back with one copy each way, and
// the cumsum, an output too, is returned from the copy made for the second matmul (no copy after
// the last step).
TEST(Vulkan, DeviceInputsAndOutputsInAMixedPlan) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {128, 128});
  Value *h = g.add_op("matmul", {x, g.add_constant("w1", random_tensor({128, 128}, 1))}, {}, "mm1");
  Value *c = g.add_op("cumsum", {h, g.add_constant("axis", ints({}, {1}))}, {}, "running");
  g.mark_output(
      g.add_op("matmul", {c, g.add_constant("w2", random_tensor({128, 128}, 2))}, {}, "mm2"));
  g.mark_output(c);
  Executable *exe =
      g.compile(&rt, CompileOptions{.input_device = "vulkan", .output_device = "vulkan"});
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"matmul@vulkan", "copy@vulkan", "cumsum@cpu", "copy@vulkan",
                                      "matmul@vulkan"}));
  Runtime cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *want = g.compile(&cpu);
  for (int run = 0; run < 3; ++run) {
    const Tensor host = random_tensor({128, 128}, 20 + run);
    const auto got = exe->execute({to_device(host, "vulkan")});
    const auto expected = want->execute({host});
    for (size_t o = 0; o < 2; ++o) {
      EXPECT_EQ(got[o].device(), get_backend("vulkan").device()) << o;
      EXPECT_TRUE(all_close(to_device(got[o], "cpu"), expected[o], 1e-4, 1e-2)) << run << " " << o;
    }
  }
}

// A copy to the host that the executor leaves under way (Backend::copy_async: an Event) holds
// the data once waited for, though the device work before it was only recorded when it began.
TEST(Vulkan, AnAsyncCopyToTheHostHasTheDataOnceWaitedFor) {
  SKIP_WITHOUT_VULKAN();
  Backend &vulkan = get_backend("vulkan");
  const Tensor a = random_tensor({256, 256}, 1), b = random_tensor({256, 256}, 2);
  const Tensor da = to_device(a, "vulkan"), db = to_device(b, "vulkan");
  Tensor product = Tensor::empty({256, 256}, DType::Float32, &vulkan.allocator());
  std::unique_ptr<Stream> stream = vulkan.new_stream();
  Runtime rt;
  const Attributes none;
  KernelContext ctx{.inputs = {&da, &db},
                    .outputs = {&product},
                    .attrs = none,
                    .pool = rt.thread_pool(),
                    .stream = stream.get(),
                    .op = "matmul",
                    .node = "mm"};
  vulkan.find_kernel("matmul", DType::Float32)(ctx);
  Tensor host = Tensor::zeros({256, 256});
  std::unique_ptr<Event> arriving = vulkan.copy_async(host, product, stream.get());
  ASSERT_NE(arriving, nullptr);
  arriving->wait();
  arriving->wait();  // harmless
  EXPECT_TRUE(all_close(host, call_op("matmul", {a, b}, {}, "cpu")[0], 1e-4, 1e-3));
  stream->synchronize();
}

// A kernel's own limits (SupportsFn) beyond its (op, dtype): the Vulkan fill writes 32-bit
// words, so a bool constant_of_shape goes to the CPU however fast Vulkan is (the matmul beside it
// to Vulkan), and a compile pinned to Vulkan says why it cannot run it.
TEST(Vulkan, KernelLimitsKeepANodeOffADevice) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {256, 256});
  g.mark_output(g.add_op("matmul", {x, g.add_constant("w", random_tensor({256, 256}, 1))}));
  g.mark_output(g.add_op("constant_of_shape", {g.add_constant("shape", ints({2}, {4, 6}))},
                         Attributes{{"value", Tensor::from_vector<bool>({1}, {true})}}, "mask"));
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"copy@vulkan", "matmul@vulkan", "constant_of_shape@cpu",
                                      "copy@vulkan"}));
  const auto got = exe->execute({random_tensor({256, 256}, 2)});
  EXPECT_EQ(got[1].dtype(), DType::Bool);
  for (int64_t i = 0; i < got[1].numel(); ++i) EXPECT_TRUE(got[1].data<bool>()[i]);
  Runtime vk{RuntimeOptions{.backend = "vulkan"}};
  testing::expect_error([&] { g.compile(&vk); },
                        "'mask' (constant_of_shape, int64: vulkan: a bool value (the Vulkan fill "
                        "writes 32-bit words))");
}

// What the fusion passes make runs on Vulkan: a conv with its residual add and activation
// (fused_conv), a matmul with bias and activation (fused_gemm), and an element-wise chain
// (fused_elementwise),
// pinned to Vulkan and optimized, against the CPU.
TEST(Vulkan, FusedGraphRunsOnVulkan) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {1, 8, 10, 10});
  Value *c = g.add_op("conv2d",
                      {x, g.add_constant("w", random_tensor({8, 8, 3, 3}, 1)),
                       g.add_constant("b", random_tensor({8}, 2))},
                      Attributes{{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  c = g.add_op("relu", {g.add_op("add", {c, x})});
  Value *f = g.add_op("reshape", {c, g.add_constant("s", ints({2}, {1, 800}))});
  f = g.add_op("matmul", {f, g.add_constant("w2", random_tensor({800, 16}, 3))});
  f = g.add_op("add", {f, g.add_constant("b2", random_tensor({16}, 4))});
  f = g.add_op("tanh", {f});
  f = g.add_op("mul", {g.add_op("sigmoid", {f}), g.add_constant("k", scalar(1.7f))});
  g.mark_output(g.add_op("sub", {f, g.add_constant("k2", scalar(0.3f))}));
  g.optimize(2, OptimizeOptions{.target_supports = ops_supported_by("vulkan")});
  Runtime vk{RuntimeOptions{.backend = "vulkan"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *exe = g.compile(&vk);
  std::set<std::string> ops;
  for (const StepInfo &s : exe->steps()) {
    EXPECT_TRUE(s.op == "copy" || s.backend == "vulkan") << s.op << " on " << s.backend;
    ops.insert(s.op);
  }
  for (const char *fused : {"fused_conv", "fused_gemm", "fused_elementwise"})
    EXPECT_TRUE(ops.count(fused)) << fused << " not made";
  const Tensor in = random_tensor({1, 8, 10, 10}, 5);
  EXPECT_TRUE(all_close(exe->execute({in})[0], g.compile(&cpu)->execute({in})[0], 1e-4, 1e-4));
}

}  // namespace
}  // namespace lumen
