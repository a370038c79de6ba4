// Element-wise math ops on the reference backend: hand-computed values (rounding half to even,
// NumPy-style mod signs, attribute defaults, broadcasting) and errors naming the op.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::all_close;

template <class T>
std::vector<T> vals(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor f64(const Shape &s, std::vector<double> v) {
  return Tensor::from_vector<double>(s, v);
}

TEST(MathTest, TrigonometryAndFriends) {
  const Tensor x = f64({3}, {0.0, 0.5, -0.25});
  struct Case {
    const char *op;
    double (*fn)(double);
  };
  const Case cases[] = {{"sin", std::sin},     {"cos", std::cos},   {"tan", std::tan},
                        {"asin", std::asin},   {"acos", std::acos}, {"atan", std::atan},
                        {"sinh", std::sinh},   {"cosh", std::cosh}, {"asinh", std::asinh},
                        {"atanh", std::atanh}, {"erf", std::erf}};
  for (const Case &c : cases) {
    const Tensor y = call_op(c.op, {x})[0];
    for (int i = 0; i < 3; ++i)
      EXPECT_DOUBLE_EQ(y.data<double>()[i], c.fn(x.data<double>()[i])) << c.op;
  }
  EXPECT_DOUBLE_EQ(call_op("acosh", {f64({1}, {2.0})})[0].data<double>()[0], std::acosh(2.0));
  EXPECT_EQ(vals<double>(call_op("reciprocal", {f64({2}, {4, -0.5})})[0]),
            (std::vector<double>{0.25, -2}));
  EXPECT_EQ(vals<double>(call_op("softsign", {f64({2}, {1, -3})})[0]),
            (std::vector<double>{0.5, -0.75}));
}

TEST(MathTest, RoundingOps) {
  const Tensor x = f64({6}, {0.5, 1.5, 2.5, -2.5, -1.2, 2.7});
  EXPECT_EQ(vals<double>(call_op("round", {x})[0]), (std::vector<double>{0, 2, 2, -2, -1, 3}));
  EXPECT_EQ(vals<double>(call_op("floor", {x})[0]), (std::vector<double>{0, 1, 2, -3, -2, 2}));
  EXPECT_EQ(vals<double>(call_op("ceil", {x})[0]), (std::vector<double>{1, 2, 3, -2, -1, 3}));
  const Tensor i = Tensor::from_vector<int32_t>({3}, {-5, 0, 7});
  EXPECT_EQ(vals<int32_t>(call_op("sign", {i})[0]), (std::vector<int32_t>{-1, 0, 1}));
  expect_error([&] { call_op("floor", {i}); }, {"floor", "int32"});
}

TEST(MathTest, ActivationsWithAttributes) {
  const Tensor x = f64({3}, {-1, 0.5, 2});
  const Tensor selu = call_op("selu", {x}, {{"alpha", 2.0}, {"gamma", 3.0}})[0];
  EXPECT_TRUE(all_close(selu, f64({3}, {3 * (2 * std::exp(-1.0) - 2), 1.5, 6})));
  const Tensor celu = call_op("celu", {x}, {{"alpha", 2.0}})[0];
  EXPECT_TRUE(all_close(celu, f64({3}, {2 * (std::exp(-0.5) - 1), 0.5, 2})));
  EXPECT_EQ(vals<double>(call_op("thresholded_relu", {x})[0]), (std::vector<double>{0, 0, 2}));
  EXPECT_EQ(vals<double>(call_op("shrink", {x}, {{"lambd", 0.6}, {"bias", 0.5}})[0]),
            (std::vector<double>{-0.5, 0, 1.5}));
  const Tensor mish = call_op("mish", {f64({2}, {1, 100})})[0];
  EXPECT_TRUE(all_close(mish, f64({2}, {std::tanh(std::log1p(std::exp(1.0))), 100})));
}

TEST(MathTest, ModFollowsDivisorUnlessFmod) {
  const Tensor a = Tensor::from_vector<int32_t>({4}, {-7, 7, -7, 7});
  const Tensor b = Tensor::from_vector<int32_t>({4}, {3, -3, -3, 3});
  EXPECT_EQ(vals<int32_t>(call_op("mod", {a, b})[0]), (std::vector<int32_t>{2, -2, -1, 1}));
  EXPECT_EQ(vals<int32_t>(call_op("mod", {a, b}, {{"fmod", int64_t(1)}})[0]),
            (std::vector<int32_t>{-1, 1, -1, 1}));
  const Tensor fa = f64({3}, {-7.5, 7.5, 6});
  const Tensor fb = f64({1}, {-2});
  EXPECT_EQ(vals<double>(call_op("mod", {fa, fb})[0]), (std::vector<double>{-1.5, -0.5, -0.0}));
  EXPECT_EQ(vals<double>(call_op("mod", {fa, fb}, {{"fmod", int64_t(1)}})[0]),
            (std::vector<double>{-1.5, 1.5, 0}));
  const Tensor z = Tensor::from_vector<int32_t>({1}, {0});
  expect_error([&] { call_op("mod", {a, z}); }, {"mod", "by zero"});
}

TEST(MathTest, PreluAndMean) {
  const Tensor x = f64({2, 2}, {-1, 2, -3, 4});
  const Tensor slope = f64({2}, {0.5, 0.25});
  EXPECT_EQ(vals<double>(call_op("prelu", {x, slope})[0]), (std::vector<double>{-0.5, 2, -1.5, 4}));
  expect_error([&] { call_op("prelu", {slope, x}); }, {"prelu", "[2, 2]", "[2]"});
  const Tensor m = call_op("mean", {x, slope, f64({}, {3})})[0];
  EXPECT_EQ(m.shape(), (Shape{2, 2}));
  EXPECT_TRUE(all_close(m, f64({2, 2}, {2.5 / 3, 5.25 / 3, 0.5 / 3, 7.25 / 3})));
  expect_error(
      [&] {
        call_op("mean", {x, Tensor::zeros({2}, DType::Float32)});
      },
      {"mean", "float64", "float32"});
}

}  // namespace
}  // namespace lumen
