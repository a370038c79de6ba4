// layer_norm, rms_norm, instance_norm, group_norm, lp_norm and mean_variance_norm on the
// reference kernels: hand-computed values and errors naming the op.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
}

std::vector<Tensor> run(const std::string &op, const std::vector<Tensor> &inputs,
                        const Attributes &attrs = {}) {
  return call_op(op, inputs, attrs, "reference");
}

TEST(NormsTest, LayerNormLastAxisWithStatistics) {
  // Rows [1, 3] and [0, 4]: means 2 and 2, variances 1 and 4; epsilon 0.
  const auto out =
      run("layer_norm", {f32({2, 2}, {1, 3, 0, 4}), f32({2}, {2, 1}), f32({2}, {0, 10})},
          {{"epsilon", 0.0}});
  ASSERT_EQ(out.size(), 3u);
  const float want[] = {-2, 11, -2, 11};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0].data<float>()[i], want[i], 1e-6) << i;
  EXPECT_EQ(out[1].shape(), (Shape{2, 1}));
  EXPECT_NEAR(out[1].data<float>()[1], 2, 1e-6);
  EXPECT_NEAR(out[2].data<float>()[1], 0.5, 1e-6);  // 1 / sqrt(4)
}

TEST(NormsTest, LayerNormAxisZeroNormalizesEverything) {
  const auto out =
      run("layer_norm", {f32({2, 2}, {1, 2, 3, 4}), f32({1}, {1})}, {{"axis", int64_t{0}}});
  // mean 2.5, variance 1.25.
  const double inv = 1 / std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(out[0].data<float>()[0], -1.5 * inv, 1e-5);
  EXPECT_NEAR(out[0].data<float>()[3], 1.5 * inv, 1e-5);
  EXPECT_EQ(out[1].shape(), (Shape{1, 1}));
}

TEST(NormsTest, RmsNorm) {
  // Row [3, 4]: mean of squares 12.5.
  const auto out = run("rms_norm", {f32({1, 2}, {3, 4}), f32({2}, {1, 2})}, {{"epsilon", 0.0}});
  const double r = std::sqrt(12.5);
  EXPECT_NEAR(out[0].data<float>()[0], 3 / r, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[1], 8 / r, 1e-6);
}

TEST(NormsTest, InstanceAndGroupNorm) {
  // x [1, 2, 2]: channel 0 [0, 2] (mean 1, var 1), channel 1 [1, 5] (mean 3, var 4).
  const Tensor x = f32({1, 2, 2}, {0, 2, 1, 5});
  const auto in = run("instance_norm", {x, f32({2}, {1, 2}), f32({2}, {0, 1})}, {{"epsilon", 0.0}});
  const float want[] = {-1, 1, -1, 3};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(in[0].data<float>()[i], want[i], 1e-6) << i;
  // One group over all four values: mean 2, var (4 + 0 + 1 + 9) / 4 = 3.5.
  const auto g = run("group_norm", {x, f32({2}, {1, 1}), f32({2}, {0, 0})},
                     {{"num_groups", int64_t{1}}, {"epsilon", 0.0}});
  EXPECT_NEAR(g[0].data<float>()[3], 3 / std::sqrt(3.5), 1e-6);
  // Two groups equal instance norm; per-group parameters (opset 18 form).
  const auto g2 =
      run("group_norm", {x, f32({2}, {1, 2}), f32({2}, {0, 1})},
          {{"num_groups", int64_t{2}}, {"epsilon", 0.0}, {"scale_per_group", int64_t{1}}});
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(g2[0].data<float>()[i], want[i], 1e-6) << i;
  expect_error(
      [&] {
        run("group_norm", {x, f32({2}, {1, 1}), f32({2}, {0, 0})}, {{"num_groups", int64_t{3}}});
      },
      "does not divide");
}

TEST(NormsTest, LpNormAndMeanVarianceNorm) {
  const auto l2 = run("lp_norm", {f32({2, 2}, {3, 4, 0, 0})});
  EXPECT_NEAR(l2[0].data<float>()[0], 0.6, 1e-6);
  EXPECT_NEAR(l2[0].data<float>()[1], 0.8, 1e-6);
  EXPECT_EQ(l2[0].data<float>()[2], 0.0f);  // zero norm gives 0
  const auto l1 = run("lp_norm", {f32({2}, {-1, 3})}, {{"p", int64_t{1}}, {"axis", int64_t{0}}});
  EXPECT_NEAR(l1[0].data<float>()[0], -0.25, 1e-6);
  // mvn over axis 1 of [1, 4]: mean 2.5, std sqrt(1.25).
  const auto mvn =
      run("mean_variance_norm", {f32({1, 4}, {1, 2, 3, 4})}, {{"axes", std::vector<int64_t>{1}}});
  EXPECT_NEAR(mvn[0].data<float>()[0], -1.5 / (std::sqrt(1.25) + 1e-9), 1e-5);
  expect_error(
      [&] {
        run("lp_norm", {f32({2}, {1, 2})}, {{"p", int64_t{3}}});
      },
      "p must be 1 or 2");
  expect_error(
      [&] {
        run("layer_norm", {f32({2, 2}, {1, 2, 3, 4}), f32({3}, {1, 1, 1})});
      },
      "does not broadcast");
}

TEST(NormsTest, LayerNormCpuMatchesReference) {
  using testing::cpu_matches_reference;
  using testing::random_tensor;
  // Last axis with [D] parameters; axis 1 (two normalized dims) with [4, 8], [8] broadcast over
  // them and [1] everywhere; parameters that vary per row ([3, 1, 8], bias [3, 4, 1]); empty
  // inputs, with rows of nothing ([3, 0]: mean 0, inv_std_dev 1 / sqrt(epsilon)).
  const Tensor x = random_tensor({3, 4, 8}, 1, -3, 3);
  EXPECT_TRUE(cpu_matches_reference(
      "layer_norm", {x, random_tensor({8}, 9), random_tensor({8}, 10)}, {{"axis", int64_t{-2}}}));
  EXPECT_TRUE(cpu_matches_reference(
      "layer_norm", {x, random_tensor({3, 1, 8}, 11), random_tensor({3, 4, 1}, 12)}));
  EXPECT_TRUE(cpu_matches_reference("layer_norm", {x, random_tensor({3, 1, 1}, 13)},
                                    {{"axis", int64_t{1}}, {"epsilon", 0.25}}));
  EXPECT_TRUE(
      cpu_matches_reference("layer_norm", {random_tensor({3, 0}, 14), random_tensor({0}, 15)}));
  EXPECT_TRUE(
      cpu_matches_reference("layer_norm", {x, random_tensor({8}, 2), random_tensor({8}, 3)}));
  EXPECT_TRUE(cpu_matches_reference("layer_norm", {x, random_tensor({8}, 4)}));
  EXPECT_TRUE(
      cpu_matches_reference("layer_norm", {x, random_tensor({4, 8}, 5)}, {{"axis", int64_t{1}}}));
  EXPECT_TRUE(cpu_matches_reference("layer_norm", {x, random_tensor({1}, 6)}));
  EXPECT_TRUE(
      cpu_matches_reference("layer_norm", {random_tensor({0, 8}, 7), random_tensor({8}, 8)}));
}

// The CPU rms_norm: last axis, the last two (scale [4, 8] and [1, 4, 8]), rows longer than a
// parallel chunk, epsilon, and scales that vary along earlier dims.
TEST(NormsTest, RmsNormCpuMatchesReference) {
  using testing::cpu_matches_reference;
  using testing::random_tensor;
  const Tensor x = random_tensor({3, 4, 8}, 1, -3, 3);
  EXPECT_TRUE(cpu_matches_reference("rms_norm", {x, random_tensor({8}, 2)}));
  EXPECT_TRUE(cpu_matches_reference("rms_norm", {x, random_tensor({4, 8}, 3)},
                                    {{"axis", int64_t{1}}, {"epsilon", 0.5}}));
  EXPECT_TRUE(
      cpu_matches_reference("rms_norm", {x, random_tensor({1, 4, 8}, 4)}, {{"axis", int64_t{-2}}}));
  EXPECT_TRUE(cpu_matches_reference(
      "rms_norm", {random_tensor({2, 20000}, 5, -3, 3), random_tensor({20000}, 6)}));
  EXPECT_TRUE(cpu_matches_reference("rms_norm", {x, random_tensor({3, 1, 1}, 7)}));
  EXPECT_TRUE(
      cpu_matches_reference("rms_norm", {x, random_tensor({3, 4, 8}, 8)}, {{"axis", int64_t{-2}}}));
}

// The CPU instance_norm / group_norm against the reference: 4-D and 3-D inputs, planes larger
// than a parallel chunk, inputs far from zero mean (the variance is centered), groups of several
// channels, per-group parameters, epsilon, and an empty spatial extent.
TEST(NormsTest, InstanceAndGroupNormCpuMatchesReference) {
  using testing::cpu_matches_reference;
  using testing::random_tensor;
  for (const Shape &shape : {Shape{2, 6, 9, 11}, Shape{1, 4, 130, 70}, Shape{2, 6, 50}}) {
    const Tensor x = random_tensor(shape, 1, 97, 103);  // mean ~100, spread 3
    const int64_t c = shape[1];
    EXPECT_TRUE(cpu_matches_reference(
        "instance_norm", {x, random_tensor({c}, 2), random_tensor({c}, 3)}, {}, 1e-4, 1e-4))
        << shape.to_string();
    for (int64_t groups : {int64_t{1}, int64_t{2}, int64_t{3}}) {
      if (c % groups) continue;
      EXPECT_TRUE(cpu_matches_reference("group_norm",
                                        {x, random_tensor({c}, 4), random_tensor({c}, 5)},
                                        {{"num_groups", groups}, {"epsilon", 1e-3}}, 1e-4, 1e-4))
          << shape.to_string() << " groups " << groups;
      EXPECT_TRUE(cpu_matches_reference(
          "group_norm", {x, random_tensor({groups}, 6), random_tensor({groups}, 7)},
          {{"num_groups", groups}, {"scale_per_group", int64_t{1}}}, 1e-4, 1e-4))
          << shape.to_string() << " groups " << groups << " per group";
    }
  }
  EXPECT_TRUE(cpu_matches_reference(
      "instance_norm",
      {random_tensor({2, 3, 0}, 8), random_tensor({3}, 9), random_tensor({3}, 10)}));
}

TEST(NormsTest, BatchNormTraining) {
  // Channel 0 values [1, 3] (mean 2, var 1), channel 1 [0, 0] (mean 0, var 0); epsilon 0 for c0.
  const Tensor x = f32({2, 2}, {1, 0, 3, 0});
  const auto out =
      run("batch_norm_training",
          {x, f32({2}, {1, 1}), f32({2}, {0, 5}), f32({2}, {10, 10}), f32({2}, {1, 1})},
          {{"epsilon", 0.0}, {"momentum", 0.5}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NEAR(out[0].data<float>()[0], -1, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[2], 1, 1e-6);
  EXPECT_NEAR(out[1].data<float>()[0], 6, 1e-6);    // 10 * 0.5 + 2 * 0.5
  EXPECT_NEAR(out[2].data<float>()[1], 0.5, 1e-6);  // 1 * 0.5 + 0 * 0.5
}

}  // namespace
}  // namespace lumen
