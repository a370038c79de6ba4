// Element-wise activations: hand-computed values on the reference backend, CPU against reference
// on random inputs of many shapes (scalar, empty, size-1, large enough to run in parallel), and
// errors. CPU and reference share the scalar formulas, so they are compared at rtol 1e-5 / atol
// 1e-6; hand-computed values of transcendental functions are checked at rtol 1e-6 (float32 ulp
// is 6e-8) or exactly for piecewise-linear ones.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::all_close;
using testing::cpu_matches_reference;
using testing::random_tensor;

// Runs `op` on `x` (float32) on the reference backend and returns the output values.
std::vector<float> ref(const std::string &op, const std::vector<float> &x,
                       const Attributes &attrs = {}) {
  const Tensor t = Tensor::from_vector(Shape{static_cast<int64_t>(x.size())}, x);
  const Tensor y = call_op(op, {t}, attrs, "reference").at(0);
  EXPECT_EQ(y.shape(), t.shape());
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

void expect_near_all(const std::vector<float> &got, const std::vector<double> &want,
                     double rtol = 1e-6, double atol = 1e-7) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << "element " << i;
}

TEST(ActivationTest, ReluValues) {
  EXPECT_EQ(ref("relu", {-1, 2, 0, -0.5f}), (std::vector<float>{0, 2, 0, 0}));
  EXPECT_TRUE(std::isnan(ref("relu", {NAN})[0]));
}

TEST(ActivationTest, LeakyReluValues) {
  expect_near_all(ref("leaky_relu", {-1, 2}), {-0.01, 2});
  expect_near_all(ref("leaky_relu", {-1, 2}, {{"alpha", 0.5}}), {-0.5, 2});
}

TEST(ActivationTest, SigmoidValues) {
  expect_near_all(ref("sigmoid", {0, 2, -2, -200, 200}),
                  {0.5, 0.8807970779778823, 0.11920292202211755, 0, 1});
}

TEST(ActivationTest, TanhValues) {
  expect_near_all(ref("tanh", {0, 0.5f, -0.5f}), {0, 0.46211715726000974, -0.46211715726000974});
}

TEST(ActivationTest, GeluValues) {
  expect_near_all(ref("gelu", {0, 1, -1}), {0, 0.8413447460685429, -0.15865525393145707});
  expect_near_all(ref("gelu", {0, 1, -1}, {{"approximate", std::string("tanh")}}),
                  {0, 0.8411919906082768, -0.15880800939172324});
}

TEST(ActivationTest, SiluValues) {
  expect_near_all(ref("silu", {0, 1, -1}), {0, 0.7310585786300049, -0.2689414213699951});
}

TEST(ActivationTest, EluValues) {
  expect_near_all(ref("elu", {-1, 2}), {-0.6321205588285577, 2});
  expect_near_all(ref("elu", {-1, 2}, {{"alpha", 2.0}}), {-1.2642411176571153, 2});
}

TEST(ActivationTest, SoftplusValues) {
  expect_near_all(ref("softplus", {0, 1, 100, -100}),
                  {0.6931471805599453, 1.3132616875182228, 100, 0});
}

TEST(ActivationTest, HardSigmoidAndSwishValues) {
  expect_near_all(ref("hard_sigmoid", {1, 10, -10}), {0.7, 1, 0});
  expect_near_all(ref("hard_sigmoid", {1}, {{"alpha", 0.5}, {"beta", 0.25}}), {0.75});
  expect_near_all(ref("hard_swish", {1, -4, 4, 0}), {2.0 / 3.0, 0, 4, 0});
}

TEST(ActivationTest, ClipValues) {
  expect_near_all(ref("clip", {-2, 0.5f, 3}, {{"min", -1.0}, {"max", 1.0}}), {-1, 0.5, 1});
  expect_near_all(ref("clip", {-2, 0.5f, 3}, {{"max", 1.0}}), {-2, 0.5, 1});
  expect_near_all(ref("clip", {-2, 3}), {-2, 3});
  expect_near_all(ref("clip", {-2, 3}, {{"min", int64_t{0}}}), {0, 3});  // ints accepted
}

// int64 bounds at and beyond the type's range (double(INT64_MAX) is 2^63, out of range: the
// conversion was undefined behaviour).
TEST(ActivationTest, ClipInt64BoundsAtTheLimits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::lowest();
  const Tensor x = Tensor::from_vector<int64_t>({4}, {kMin, -5, 7, kMax});
  const std::vector<std::pair<Attributes, std::vector<int64_t>>> cases = {
      {{}, {kMin, -5, 7, kMax}},
      {{{"max", 1e300}, {"min", -1e300}}, {kMin, -5, 7, kMax}},
      {{{"min", 0.0}}, {0, 0, 7, kMax}},
      {{{"max", 6.0}}, {kMin, -5, 6, 6}}};
  for (const auto &[attrs, want] : cases)
    for (const char *backend : {"reference", ""}) {  // "": the preferred backend with a kernel
      const Tensor y = call_op("clip", {x}, attrs, backend)[0];
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(y.data<int64_t>()[i], want[i]) << backend << " " << attrs.to_string();
    }
}

TEST(ActivationTest, MathValues) {
  expect_near_all(ref("exp", {0, 1}), {1, M_E});
  expect_near_all(ref("log", {1, float(M_E)}), {0, 1});
  expect_near_all(ref("sqrt", {4, 2}), {2, M_SQRT2});
  expect_near_all(ref("neg", {1, -2}), {-1, 2});
  expect_near_all(ref("abs", {-1.5f, 2}), {1.5, 2});
}

TEST(ActivationTest, Float64Reference) {
  const Tensor x = Tensor::from_vector<double>({2}, {1.0, -1.0});
  const Tensor y = call_op("sigmoid", {x}, {}, "reference").at(0);
  ASSERT_EQ(y.dtype(), DType::Float64);
  EXPECT_NEAR(y.data<double>()[0], 0.7310585786300049, 1e-15);
  EXPECT_NEAR(y.data<double>()[1], 0.2689414213699951, 1e-15);
}

struct UnaryCase {
  std::string op;
  Attributes attrs;
  double lo = -4, hi = 4;  // input range
};

std::vector<UnaryCase> unary_cases() {
  return {{"relu", {}},
          {"leaky_relu", {}},
          {"leaky_relu", {{"alpha", 0.2}}},
          {"sigmoid", {}},
          {"tanh", {}},
          {"gelu", {}},
          {"gelu", {{"approximate", std::string("tanh")}}},
          {"silu", {}},
          {"elu", {}},
          {"elu", {{"alpha", 0.5}}},
          {"softplus", {}, -30, 30},
          {"hard_sigmoid", {}},
          {"hard_sigmoid", {{"alpha", 0.3}, {"beta", 0.4}}},
          {"hard_swish", {}},
          {"clip", {}},
          {"clip", {{"min", -0.5}, {"max", 0.75}}},
          {"exp", {}},
          {"erf", {}},
          {"log", {}, 0.01, 10},
          {"sqrt", {}, 0, 10},
          {"neg", {}},
          {"abs", {}}};
}

TEST(ActivationTest, CpuMatchesReference) {
  const std::vector<Shape> shapes = {{}, {1}, {0}, {3, 0, 2}, {1, 1, 1}, {2, 3, 4}, {7, 129}};
  uint64_t seed = 1;
  for (const UnaryCase &c : unary_cases())
    for (DType dtype : {DType::Float32, DType::Float64})
      for (const Shape &shape : shapes) {
        const Tensor x = random_tensor(shape, seed++, c.lo, c.hi, dtype);
        EXPECT_TRUE(cpu_matches_reference(c.op, {x}, c.attrs, 1e-5, 1e-6))
            << c.op << " " << c.attrs.to_string() << " " << x.to_string();
      }
}

TEST(ActivationTest, CpuMatchesReferenceLarge) {
  uint64_t seed = 100;
  for (const UnaryCase &c : unary_cases()) {
    const Tensor x = random_tensor({1 << 20}, seed++, c.lo, c.hi);
    EXPECT_TRUE(cpu_matches_reference(c.op, {x}, c.attrs, 1e-5, 1e-6)) << c.op;
  }
  const Tensor x = random_tensor({3, 1 << 18}, seed, -4, 4, DType::Float64);
  EXPECT_TRUE(cpu_matches_reference("gelu", {x}, {}, 1e-12, 1e-14));
}

TEST(ActivationTest, OutputKeepsShapeAndDtype) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor x = random_tensor({2, 0, 3}, 5, -1, 1, DType::Float64);
    const Tensor y = call_op("silu", {x}, {}, backend).at(0);
    EXPECT_EQ(y.shape(), (Shape{2, 0, 3}));
    EXPECT_EQ(y.dtype(), DType::Float64);
    const Tensor s = call_op("relu", {Tensor::from_vector<float>({}, {-3.0f})}, {}, backend).at(0);
    EXPECT_EQ(s.shape(), Shape{});
    EXPECT_EQ(s.data<float>()[0], 0.0f);
  }
}

TEST(ActivationTest, SchemasAreElementwise) {
  for (const UnaryCase &c : unary_cases()) EXPECT_TRUE(get_op(c.op).elementwise) << c.op;
}

TEST(ActivationTest, Errors) {
  const Tensor ints = Tensor::from_vector<int32_t>({2}, {1, 2});
  const Tensor flags = Tensor::from_vector<bool>({2}, {true, false});
  expect_error([&] { call_op("relu", {flags}); }, {"relu", "bool"});
  expect_error([&] { call_op("sigmoid", {ints}, {}, "cpu"); }, {"sigmoid", "int32"});
  const Tensor x = random_tensor({3}, 1);
  expect_error(
      [&] {
        call_op("gelu", {x}, {{"approximate", std::string("erf")}});
      },
      {"gelu", "approximate", "erf"});
  expect_error([&] { call_op("elu", {x}, {{"alpha", std::string("big")}}); }, "alpha");
  expect_error([&] { call_op("tanh", {x, x}); }, {"tanh", "expected 1 inputs, got 2"});
}

}  // namespace
}  // namespace lumen
