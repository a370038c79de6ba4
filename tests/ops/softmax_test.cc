// softmax / log_softmax: hand-computed values (exp(x)/sum by hand, rows summing to 1, no overflow
// for large inputs), CPU against reference on every axis, scalar, empty and large inputs (rtol
// 1e-5 / atol 1e-6 for float32: the two backends normalize in a different order), and errors.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::cpu_matches_reference;
using testing::random_tensor;

TEST(SoftmaxTest, HandComputedLastAxis) {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0, 5});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("softmax", {x}, {}, backend).at(0);
    const Tensor l = call_op("log_softmax", {x}, {}, backend).at(0);
    ASSERT_EQ(y.shape(), (Shape{2, 3}));
    for (int r = 0; r < 2; ++r) {
      const float *in = x.data<float>() + 3 * r;
      const double sum = std::exp(in[0]) + std::exp(in[1]) + std::exp(in[2]);
      double row_sum = 0;
      for (int c = 0; c < 3; ++c) {
        const double want = std::exp(in[c]) / sum;
        EXPECT_NEAR(y.data<float>()[3 * r + c], want, 1e-6 * want) << backend;
        EXPECT_NEAR(l.data<float>()[3 * r + c], std::log(want), 1e-6) << backend;
        row_sum += y.data<float>()[3 * r + c];
      }
      EXPECT_NEAR(row_sum, 1.0, 1e-6);
    }
    // Known values: softmax([1, 2, 3]).
    EXPECT_NEAR(y.data<float>()[0], 0.09003057317038046, 1e-7);
    EXPECT_NEAR(y.data<float>()[2], 0.6652409557748219, 1e-7);
  }
}

TEST(SoftmaxTest, HandComputedAxis0) {
  const Tensor x = Tensor::from_vector<double>({2, 2}, {0, 1, std::log(3.0), 1});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("softmax", {x}, {{"axis", int64_t{0}}}, backend).at(0);
    const std::vector<double> want = {0.25, 0.5, 0.75, 0.5};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y.data<double>()[i], want[i], 1e-15) << backend;
  }
}

TEST(SoftmaxTest, LargeInputsDoNotOverflow) {
  const Tensor x = Tensor::from_vector<float>({3}, {1000, 1001, -1e30f});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("softmax", {x}, {}, backend).at(0);
    EXPECT_NEAR(y.data<float>()[0], 0.2689414213699951, 1e-6);
    EXPECT_NEAR(y.data<float>()[1], 0.7310585786300049, 1e-6);
    EXPECT_EQ(y.data<float>()[2], 0.0f);
    const Tensor l = call_op("log_softmax", {x}, {}, backend).at(0);
    EXPECT_NEAR(l.data<float>()[0], -1.3132616875182228, 1e-5);
    EXPECT_NEAR(l.data<float>()[1], -0.3132616875182228, 1e-5);
  }
}

TEST(SoftmaxTest, ScalarAndEmpty) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor s = Tensor::from_vector<float>({}, {3.5f});
    EXPECT_EQ(call_op("softmax", {s}, {}, backend).at(0).data<float>()[0], 1.0f);
    EXPECT_EQ(call_op("log_softmax", {s}, {{"axis", int64_t{0}}}, backend).at(0).data<float>()[0],
              0.0f);
    const Tensor e = random_tensor({0, 5}, 1);
    EXPECT_EQ(call_op("softmax", {e}, {}, backend).at(0).shape(), (Shape{0, 5}));
    const Tensor f = random_tensor({4, 0}, 1);
    EXPECT_EQ(call_op("softmax", {f}, {{"axis", int64_t{0}}}, backend).at(0).shape(),
              (Shape{4, 0}));
  }
}

TEST(SoftmaxTest, CpuMatchesReference) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, 2}, {{2, 3, 4}, -1},   {{2, 3, 4}, -3},
      {{1}, 0},       {{7}, -1},      {{1, 1, 1}, 1}, {{3, 100, 70}, 1}, {{5, 1, 9}, 1},
      {{}, -1},       {{0, 5}, 1},    {{5, 0}, 0},    {{2, 0, 3}, 2},    {{6, 300}, -1}};
  uint64_t seed = 1;
  for (const std::string op : {"softmax", "log_softmax"})
    for (DType dtype : {DType::Float32, DType::Float64})
      for (const Case &c : cases) {
        const Tensor x = random_tensor(c.shape, seed++, -5, 5, dtype);
        EXPECT_TRUE(cpu_matches_reference(op, {x}, {{"axis", c.axis}}, 1e-5, 1e-6))
            << op << " " << x.to_string() << " axis " << c.axis;
      }
}

TEST(SoftmaxTest, CpuMatchesReferenceLarge) {
  uint64_t seed = 100;
  for (const std::string op : {"softmax", "log_softmax"}) {
    EXPECT_TRUE(cpu_matches_reference(op, {random_tensor({1 << 20}, seed++, -5, 5)}, {}, 1e-5,
                                      1e-6));  // one long row
    EXPECT_TRUE(cpu_matches_reference(op, {random_tensor({1024, 1024}, seed++, -5, 5)}, {}, 1e-5,
                                      1e-6));  // many rows, parallel
    EXPECT_TRUE(cpu_matches_reference(op, {random_tensor({1024, 1024}, seed++, -5, 5)},
                                      {{"axis", int64_t{0}}}, 1e-5, 1e-6));  // column blocks
    EXPECT_TRUE(cpu_matches_reference(op, {random_tensor({8, 16, 8192}, seed++, -5, 5)},
                                      {{"axis", int64_t{1}}}, 1e-5, 1e-6));
  }
}

TEST(SoftmaxTest, RowsSumToOneOnCpu) {
  const Tensor x = random_tensor({64, 1000}, 9, -20, 20);
  const Tensor y = call_op("softmax", {x}, {}, "cpu").at(0);
  for (int r = 0; r < 64; ++r) {
    double sum = 0;
    for (int c = 0; c < 1000; ++c) sum += y.data<float>()[r * 1000 + c];
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
}

TEST(SoftmaxTest, Errors) {
  const Tensor x = random_tensor({2, 3}, 1);
  expect_error([&] { call_op("softmax", {x}, {{"axis", int64_t{2}}}); }, {"softmax", "axis 2"});
  expect_error(
      [&] {
        call_op("log_softmax", {x}, {{"axis", int64_t{-3}}});
      },
      {"log_softmax", "axis -3"});
  expect_error([&] { call_op("softmax", {Tensor::zeros({3}, DType::Int32)}); },
               {"softmax", "int32"});
  expect_error(
      [&] {
        call_op("softmax", {Tensor::from_vector<float>({}, {1})}, {{"axis", int64_t{1}}});
      },
      {"softmax", "rank-0"});
}

}  // namespace
}  // namespace lumen
