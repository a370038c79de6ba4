// negative_log_likelihood_loss / softmax_cross_entropy_loss: hand-computed losses for every
// reduction, weights, ignore_index (also negative), N-d inputs, int32 targets, the log_prob
// output, float16, and errors (bad target values, shapes, dtypes, reduction). Also float16
// reduce_max / reduce_min and matmul on the reference backend.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

template <class Fn>
void expect_error(Fn &&fn, const std::vector<std::string> &needles) {
  try {
    fn();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error &e) {
    const std::string msg = e.what();
    for (const auto &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in: " << msg;
  }
}

Attributes red(const std::string &r) {
  Attributes a;
  a.set("reduction", r);
  return a;
}

// x = [[1, 2, 3], [4, 5, 6]] (N = 2, C = 3), target = [2, 0], weight = [0.5, 1, 2].
const Tensor kX = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
const Tensor kT = Tensor::from_vector<int64_t>({2}, {2, 0});
const Tensor kW = Tensor::from_vector<float>({3}, {0.5f, 1, 2});

TEST(LossTest, NllReductions) {
  const Tensor none =
      call_op("negative_log_likelihood_loss", {kX, kT}, red("none"), "reference")[0];
  ASSERT_EQ(none.shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(none.data<float>()[0], -3);
  EXPECT_FLOAT_EQ(none.data<float>()[1], -4);
  const Tensor sum = call_op("negative_log_likelihood_loss", {kX, kT}, red("sum"), "reference")[0];
  ASSERT_EQ(sum.shape(), Shape{});
  EXPECT_FLOAT_EQ(sum.data<float>()[0], -7);
  const Tensor mean = call_op("negative_log_likelihood_loss", {kX, kT}, {}, "reference")[0];
  EXPECT_FLOAT_EQ(mean.data<float>()[0], -3.5);
}

TEST(LossTest, NllWeightAndIgnoreIndex) {
  // weights of the targets: w[2] = 2, w[0] = 0.5; losses -6, -2; mean = -8 / 2.5.
  const Tensor none =
      call_op("negative_log_likelihood_loss", {kX, kT, kW}, red("none"), "reference")[0];
  EXPECT_FLOAT_EQ(none.data<float>()[0], -6);
  EXPECT_FLOAT_EQ(none.data<float>()[1], -2);
  const Tensor mean = call_op("negative_log_likelihood_loss", {kX, kT, kW}, {}, "reference")[0];
  EXPECT_FLOAT_EQ(mean.data<float>()[0], -8.0f / 2.5f);
  // ignore_index 0 drops the second element: mean = -6 / 2.
  Attributes a = red("mean");
  a.set("ignore_index", int64_t{0});
  const Tensor ii = call_op("negative_log_likelihood_loss", {kX, kT, kW}, a, "reference")[0];
  EXPECT_FLOAT_EQ(ii.data<float>()[0], -3);
  // Without a weight: mean over the non-ignored elements only.
  const Tensor ii2 = call_op("negative_log_likelihood_loss", {kX, kT}, a, "reference")[0];
  EXPECT_FLOAT_EQ(ii2.data<float>()[0], -3);
  // A negative ignore_index that is used in the target.
  Attributes neg = red("sum");
  neg.set("ignore_index", int64_t{-1});
  const Tensor t = Tensor::from_vector<int32_t>({2}, {-1, 1});
  const Tensor s = call_op("negative_log_likelihood_loss", {kX, t}, neg, "reference")[0];
  EXPECT_FLOAT_EQ(s.data<float>()[0], -5);
}

TEST(LossTest, NllNd) {
  // x [1, 2, 2] (N = 1, C = 2, d1 = 2): x[0, c, d] = 10 c + d; target [[1, 0]].
  const Tensor x = Tensor::from_vector<double>({1, 2, 2}, {0, 1, 10, 11});
  const Tensor t = Tensor::from_vector<int64_t>({1, 2}, {1, 0});
  const Tensor none = call_op("negative_log_likelihood_loss", {x, t}, red("none"), "reference")[0];
  ASSERT_EQ(none.shape(), (Shape{1, 2}));
  EXPECT_DOUBLE_EQ(none.data<double>()[0], -10);
  EXPECT_DOUBLE_EQ(none.data<double>()[1], -1);
}

TEST(LossTest, SoftmaxCrossEntropy) {
  const std::vector<Tensor> out =
      call_op("softmax_cross_entropy_loss", {kX, kT, kW}, red("none"), "reference");
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[1].shape(), (Shape{2, 3}));
  // log_softmax of [1, 2, 3] (and of [4, 5, 6], the same values).
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(out[1].data<float>()[3 * r + c], c + 1 - lse, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[0], -2 * (3 - lse), 1e-5);
  EXPECT_NEAR(out[0].data<float>()[1], -0.5 * (1 - lse), 1e-5);
  const Tensor mean = call_op("softmax_cross_entropy_loss", {kX, kT, kW}, {}, "reference")[0];
  EXPECT_NEAR(mean.data<float>()[0], (-2 * (3 - lse) - 0.5 * (1 - lse)) / 2.5, 1e-5);
}

Float16 h(uint16_t bits) {
  return Float16{bits};
}

TEST(LossTest, Float16) {
  // 1, 2, 3, 4, 5, 6 in float16; sum of -3 and -4 is -7 (0xC700).
  const Tensor x = Tensor::from_vector<Float16>(
      {2, 3}, {h(0x3C00), h(0x4000), h(0x4200), h(0x4400), h(0x4500), h(0x4600)});
  const Tensor y = call_op("negative_log_likelihood_loss", {x, kT}, red("sum"), "reference")[0];
  ASSERT_EQ(y.dtype(), DType::Float16);
  EXPECT_EQ(y.data<Float16>()[0].bits, 0xC700);
}

TEST(LossTest, HalfReduceAndMatmul) {
  const Tensor x =
      Tensor::from_vector<Float16>({2, 2}, {h(0x3C00), h(0x4000), h(0x4200), h(0xC400)});
  // max over axis 1: [2, 3]; min: [1, -4].
  Attributes a;
  a.set("axes", std::vector<int64_t>{1});
  a.set("keepdims", int64_t{0});
  const Tensor mx = call_op("reduce_max", {x}, a, "reference")[0];
  const Tensor mn = call_op("reduce_min", {x}, a, "reference")[0];
  ASSERT_EQ(mx.shape(), (Shape{2}));
  EXPECT_EQ(mx.data<Float16>()[0].bits, 0x4000);
  EXPECT_EQ(mx.data<Float16>()[1].bits, 0x4200);
  EXPECT_EQ(mn.data<Float16>()[0].bits, 0x3C00);
  EXPECT_EQ(mn.data<Float16>()[1].bits, 0xC400);
  // [[1, 2], [3, -4]] @ [[1, 2], [3, -4]] = [[7, -6], [-9, 22]].
  const Tensor m = call_op("matmul", {x, x}, {}, "reference")[0];
  ASSERT_EQ(m.dtype(), DType::Float16);
  EXPECT_EQ(m.data<Float16>()[0].bits, 0x4700);  // 7
  EXPECT_EQ(m.data<Float16>()[1].bits, 0xC600);  // -6
  EXPECT_EQ(m.data<Float16>()[2].bits, 0xC880);  // -9
  EXPECT_EQ(m.data<Float16>()[3].bits, 0x4D80);  // 22
}

TEST(LossTest, Errors) {
  const Tensor bad = Tensor::from_vector<int64_t>({2}, {3, 0});
  expect_error(
      [&] {
        call_op("negative_log_likelihood_loss", {kX, bad}, {}, "reference");
      },
      {"target value 3", "out of range"});
  const Tensor neg = Tensor::from_vector<int64_t>({2}, {-1, 0});
  expect_error(
      [&] {
        call_op("softmax_cross_entropy_loss", {kX, neg}, {}, "reference");
      },
      {"target value -1"});
  Attributes ii = red("mean");
  ii.set("ignore_index", int64_t{5});
  expect_error(
      [&] {
        call_op("negative_log_likelihood_loss", {kX, neg}, ii, "reference");
      },
      {"not ignore_index"});
  const Tensor t3 = Tensor::from_vector<int64_t>({3}, {0, 0, 0});
  expect_error(
      [&] {
        call_op("negative_log_likelihood_loss", {kX, t3}, {}, "reference");
      },
      {"target shape"});
  const Tensor tf = Tensor::from_vector<float>({2}, {0, 0});
  expect_error(
      [&] {
        call_op("negative_log_likelihood_loss", {kX, tf}, {}, "reference");
      },
      {"int32 or int64"});
  const Tensor w2 = Tensor::from_vector<float>({2}, {1, 1});
  expect_error(
      [&] {
        call_op("negative_log_likelihood_loss", {kX, kT, w2}, {}, "reference");
      },
      {"weight of shape [3]"});
  expect_error(
      [&] {
        call_op("negative_log_likelihood_loss", {kX, kT}, red("avg"), "reference");
      },
      {"unknown reduction 'avg'"});
  const Tensor x1 = Tensor::from_vector<float>({3}, {1, 2, 3});
  expect_error(
      [&] {
        call_op("softmax_cross_entropy_loss", {x1, kT}, {}, "reference");
      },
      {"rank >= 2"});
}

}  // namespace
}  // namespace lumen
