// attention: hand-computed values for the ONNX Attention formula (softmax of scaled QK, causal
// and boolean masks, fully-masked rows, grouped-query heads, KV cache concatenation, softcap,
// 3-D layout, qk_matmul_output modes) on the reference kernel, and errors naming the op.
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

std::vector<Tensor> run(const std::vector<Tensor> &inputs, const Attributes &attrs = {}) {
  return call_op("attention", inputs, attrs, "reference");
}

TEST(AttentionTest, SoftmaxOfScaledScores) {
  // One query, two keys, head size 1: scores q*k = [0, 1] (scale 1/sqrt(1)); Y = p . V.
  const auto out =
      run({f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {0, 1}), f32({1, 1, 2, 1}, {10, 20})});
  const double e = std::exp(1.0), p0 = 1 / (1 + e), p1 = e / (1 + e);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1, 1}));
  EXPECT_NEAR(out[0].data<float>()[0], 10 * p0 + 20 * p1, 1e-5);
  // present_key/value are K/V; qk_matmul_output (mode 0) is the raw scores.
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 2, 1}));
  EXPECT_EQ(out[3].shape(), (Shape{1, 1, 1, 2}));
  EXPECT_NEAR(out[3].data<float>()[1], 1.0, 1e-6);
  // scale=4: sqrt(4) on Q and on K -> scores [0, 4].
  const auto scaled =
      run({f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {0, 1}), f32({1, 1, 2, 1}, {10, 20})},
          {{"scale", 4.0}});
  const double q0 = 1 / (1 + std::exp(4.0));
  EXPECT_NEAR(scaled[0].data<float>()[0], 10 * q0 + 20 * (1 - q0), 1e-5);
  // softcap 2: score 4 -> 2 * tanh(2).
  const auto capped =
      run({f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {0, 1}), f32({1, 1, 2, 1}, {10, 20})},
          {{"scale", 4.0}, {"softcap", 2.0}});
  EXPECT_NEAR(capped[3].data<float>()[1], 2 * std::tanh(2.0), 1e-5);
}

TEST(AttentionTest, CausalAndBooleanMask) {
  // Two queries, two keys: with is_causal, query 0 sees only key 0.
  const Tensor q = f32({1, 1, 2, 1}, {1, 1}), k = f32({1, 1, 2, 1}, {0, 1});
  const Tensor v = f32({1, 1, 2, 1}, {10, 20});
  const auto causal = run({q, k, v}, {{"is_causal", int64_t{1}}});
  EXPECT_NEAR(causal[0].data<float>()[0], 10, 1e-5);
  const double e = std::exp(1.0);
  EXPECT_NEAR(causal[0].data<float>()[1], (10 + 20 * e) / (1 + e), 1e-5);
  // A boolean mask keeping only key 1 for row 0 and nothing for row 1: row 1 is all zeros.
  Tensor mask = Tensor::empty({2, 2}, DType::Bool);
  const bool m[] = {false, true, false, false};
  for (int i = 0; i < 4; ++i) mask.data<bool>()[i] = m[i];
  const auto masked = run({q, k, v, mask}, {{"qk_matmul_output_mode", int64_t{3}}});
  EXPECT_NEAR(masked[0].data<float>()[0], 20, 1e-5);
  EXPECT_EQ(masked[0].data<float>()[1], 0.0f);
  EXPECT_EQ(masked[3].data<float>()[2], 0.0f);  // mode 3: the (zeroed) probabilities
  EXPECT_EQ(masked[3].data<float>()[3], 0.0f);
  EXPECT_NEAR(masked[3].data<float>()[1], 1.0, 1e-6);
}

TEST(AttentionTest, GroupedQueryHeadsAndPastKeys) {
  // Two query heads share one KV head; past key/value of length 1 precede the new key.
  const Tensor q = f32({1, 2, 1, 1}, {1, -1});
  const Tensor k = f32({1, 1, 1, 1}, {1}), v = f32({1, 1, 1, 1}, {20});
  const Tensor pk = f32({1, 1, 1, 1}, {0}), pv = f32({1, 1, 1, 1}, {10});
  const Tensor zeros = f32({1, 2}, {0, 0});
  const auto out = run({q, k, v, zeros, pk, pv});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 2, 1}));
  EXPECT_EQ(out[1].data<float>()[0], 0.0f);
  EXPECT_EQ(out[1].data<float>()[1], 1.0f);
  EXPECT_EQ(out[2].data<float>()[1], 20.0f);
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[0].data<float>()[0], (10 + 20 * e) / (1 + e), 1e-5);      // scores [0, 1]
  EXPECT_NEAR(out[0].data<float>()[1], (10 + 20 / e) / (1 + 1 / e), 1e-5);  // scores [0, -1]
}

TEST(AttentionTest, ThreeDimensionalLayout) {
  // [B, S, heads * head_size] with 2 heads of size 1: each head attends to its own column.
  const Tensor q = f32({1, 1, 2}, {1, 1}), k = f32({1, 2, 2}, {0, 0, 1, 0});
  const Tensor v = f32({1, 2, 2}, {10, 1, 20, 2});
  const auto out = run({q, k, v}, {{"q_num_heads", int64_t{2}}, {"kv_num_heads", int64_t{2}}});
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 2}));
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[0].data<float>()[0], (10 + 20 * e) / (1 + e), 1e-5);
  EXPECT_NEAR(out[0].data<float>()[1], 1.5, 1e-5);  // head 1: scores [0, 0]
}

TEST(AttentionTest, Errors) {
  const Tensor q = f32({1, 3, 1, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor k = f32({1, 2, 1, 2}, {1, 2, 3, 4}), v = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  expect_error([&] { run({q, k, v}); }, "multiple of kv heads");
  expect_error([&] { run({f32({2}, {1, 2}), k, v}); }, "rank 3 or all rank 4");
  expect_error(
      [&] {
        run({f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {1, 2})});
      },
      "q_num_heads and kv_num_heads are required");
  expect_error([&] { run({k, k, v, f32({1, 5}, {0, 0, 0, 0, 0})}); }, "does not broadcast");
  expect_error(
      [&] {
        run({k, k, v}, {{"qk_matmul_output_mode", int64_t{7}}});
      },
      "qk_matmul_output_mode");
}

}  // namespace
}  // namespace lumen
