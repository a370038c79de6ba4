#include "gpu_op_cases.h"

#include <cmath>
#include <limits>
#include <set>

#include "core/kernel.h"
#include "op_test_util.h"

namespace lumen::testing {

std::vector<Case> gpu_op_cases() {
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
  c.push_back(
      {"rms_norm", {r({4, 6, 96}, 69), r({96}, 70)}, Attributes{{"epsilon", 1e-3}}, 1e-4, 1e-4});
  c.push_back({"rms_norm",
               {r({4, 6, 40}, 71), r({6, 40}, 72)},
               Attributes{{"axis", int64_t{-2}}},
               1e-4,
               1e-4});
  c.push_back({"rms_norm", {r({5, 700}, 73), scalar(0.5f)}, {}, 1e-4, 1e-4});

  // Attention: rank 4; rank 3 with grouped-query heads, a bool mask (every other key of row 1
  // hidden, row 2 of batch 1 fully masked) and causality; a float mask broadcast over batch and
  // heads and shorter than the keys (the rest masked), with softcap; a sliding window.
  const auto q_rows = [](int64_t batch, int64_t seq, int64_t width, uint64_t seed) {
    return random_tensor({batch, seq, width}, seed, -1, 1);
  };
  c.push_back({"attention",
               {r({2, 4, 5, 8}, 300), r({2, 4, 7, 8}, 301), r({2, 4, 7, 6}, 302)},
               {},
               1e-4,
               1e-5});
  Tensor hide = Tensor::empty({2, 1, 5, 5}, DType::Bool);
  for (int64_t i = 0; i < hide.numel(); ++i)
    hide.data<bool>()[i] = !((i / 5) % 5 == 1 && i % 2) && !(i >= 25 && (i / 5) % 5 == 2);
  c.push_back(
      {"attention",
       {q_rows(2, 5, 32, 303), q_rows(2, 5, 16, 304), q_rows(2, 5, 16, 305), hide},
       Attributes{
           {"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}, {"is_causal", int64_t{1}}},
       1e-4,
       1e-5});
  c.push_back({"attention",
               {r({1, 2, 3, 4}, 306), r({1, 2, 6, 4}, 307), r({1, 2, 6, 4}, 308), r({3, 4}, 309)},
               Attributes{{"softcap", 2.0}, {"scale", 0.7}},
               1e-4,
               1e-5});
  c.push_back({"attention",
               {r({1, 2, 6, 4}, 310), r({1, 2, 6, 4}, 311), r({1, 2, 6, 4}, 312)},
               Attributes{{"left_window_size", int64_t{2}}, {"right_window_size", int64_t{1}}},
               1e-4,
               1e-5});

  // Cast between the standard dtypes (inputs of other dtypes made by the CPU's cast), with values
  // past int8's range, negatives and NaN; where with broadcasting; the comparisons.
  const auto cast_to = [](const Tensor &t, const char *to) {
    return call_op("cast", {t}, Attributes{{"to", to}}, "cpu")[0];
  };
  Tensor wide = random_tensor({4, 33}, 320, -300, 300);
  wide.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  wide.data<float>()[6] = 0.f;
  for (const char *to :
       {"float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8", "bool"})
    c.push_back({"cast", {wide}, Attributes{{"to", to}}, 0, 0});
  const Tensor ints32 = cast_to(random_tensor({4, 33}, 321, -1e5, 1e5), "int32");
  const Tensor ints64 = cast_to(random_tensor({4, 33}, 322, -1e6, 1e6), "int64");
  c.push_back({"cast", {ints32}, Attributes{{"to", "int64"}}, 0, 0});
  c.push_back({"cast", {ints32}, Attributes{{"to", "int8"}}, 0, 0});
  c.push_back({"cast", {ints64}, Attributes{{"to", "float32"}}, 0, 0});
  c.push_back({"cast", {ints64}, Attributes{{"to", "int32"}}, 0, 0});
  c.push_back({"cast", {cast_to(wide, "float16")}, Attributes{{"to", "float32"}}, 0, 0});
  c.push_back({"cast", {cast_to(wide, "bool")}, Attributes{{"to", "float32"}}, 0, 0});
  Tensor flags = cast_to(random_tensor({4, 1, 5}, 323, -1, 1), "bool");
  c.push_back({"where", {flags, r({4, 3, 5}, 324), r({5}, 325)}, {}, 0, 0});
  c.push_back({"where",
               {flags, cast_to(r({4, 3, 5}, 328, -50, 50), "int64"),
                cast_to(r({1, 5}, 329, -50, 50), "int64")},
               {},
               0,
               0});
  for (const char *op : {"equal", "less", "greater", "less_equal", "greater_equal"}) {
    Tensor a = random_tensor({3, 4, 5}, 326, -2, 2), b = random_tensor({4, 1}, 327, -2, 2);
    a.data<float>()[0] = b.data<float>()[0];  // an equal pair
    c.push_back({op, {a, b}, {}, 0, 0});
    c.push_back({op, {cast_to(a, "int32"), cast_to(b, "int32")}, {}, 0, 0});
    c.push_back({op, {cast_to(a, "int64"), cast_to(b, "int64")}, {}, 0, 0});
  }

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
  // ReLU alone (no bias or residual): CUDA applies it in cuBLASLt's epilogue.
  c.push_back({"fused_conv",
               {r({2, 32, 6, 6}, 143), r({48, 32, 1, 1}, 144)},
               Attributes{{"activation", "relu"}},
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

bool is_movement(const std::string &op) {
  for (const char *m : {"reshape", "flatten", "squeeze", "unsqueeze", "transpose", "concat",
                        "expand", "slice", "gather"})
    if (op == m) return true;
  return false;
}

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

void add_small_mlp(Graph &g) {
  Value *x = g.add_input("x", {8, 32});
  Value *h = g.add_op("gemm", {x, g.add_constant("w1", random_tensor({32, 64}, 1)),
                               g.add_constant("b1", random_tensor({64}, 2))});
  h = g.add_op("relu", {h});
  h = g.add_op("matmul", {h, g.add_constant("w2", random_tensor({64, 10}, 3))});
  g.mark_output(g.add_op("softmax", {h}, Attributes{{"axis", int64_t{-1}}}));
}

void expect_kernels_match_reference(const std::string &backend,
                                    const std::vector<DType> &movement_dtypes,
                                    bool (*skip)(const Case &)) {
  const KernelRegistry &registry = kernel_registry(backend);
  std::set<std::pair<std::string, DType>> covered;
  const auto check = [&](const Case &c, double rtol, double atol) {
    if (!registry.find(c.op, c.inputs[0].dtype()) || (skip && skip(c))) return;
    SCOPED_TRACE(c.op + " " + std::string(dtype_name(c.inputs[0].dtype())) + " " +
                 c.attrs.to_string());
    const auto expected = call_op(c.op, c.inputs, c.attrs, "reference");
    const auto actual = call_op(c.op, c.inputs, c.attrs, backend);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_TRUE(actual[i].device().is_host());
      EXPECT_TRUE(all_close(actual[i], expected[i], rtol, atol)) << "output " << i;
    }
    covered.insert({c.op, c.inputs[0].dtype()});
  };
  for (const Case &c : gpu_op_cases()) {
    check(c, c.rtol, c.atol);
    if (!is_movement(c.op) || c.inputs[0].dtype() != DType::Float32) continue;
    for (DType dtype : movement_dtypes) {
      Case as_int = c;
      for (Tensor &t : as_int.inputs)
        if (t.dtype() == DType::Float32) t = as_ints(t, dtype);
      check(as_int, 0, 0);
    }
  }
  for (const auto &[op, dtype] : registry.entries())
    EXPECT_TRUE(covered.count({op, dtype})) << "the " << backend << " kernel (" << op << ", "
                                            << dtype_name(dtype) << ") has no case here";
}

}  // namespace lumen::testing
