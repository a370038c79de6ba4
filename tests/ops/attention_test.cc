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

// The CPU kernel (blocked, online softmax) against the reference on random data: every layout and
// option, query blocks and key blocks crossed (more than 16 queries, more than 256 keys), and a
// mask that leaves some rows with no key. Every output the node has is compared.
TEST(AttentionTest, CpuMatchesReference) {
  using testing::all_close;
  using testing::random_tensor;
  struct Case {
    const char *name;
    Shape q, k, v;
    Attributes attrs;
    std::vector<Shape> extra;  // mask, past_key, past_value (empty shape: omitted)
    bool bool_mask = false;
  };
  const Attributes heads3{{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}};
  const std::vector<Case> cases = {
      {"plain", {2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 6}, {}, {}},
      {"long keys, many queries", {1, 2, 40, 16}, {1, 2, 600, 16}, {1, 2, 600, 16}, {}, {}},
      {"float mask [B,1,1,S]", {2, 2, 3, 8}, {2, 2, 9, 8}, {2, 2, 9, 8}, {}, {{2, 1, 1, 9}}},
      {"short mask padded", {1, 2, 3, 8}, {1, 2, 9, 8}, {1, 2, 9, 8}, {}, {{3, 6}}},
      {"bool mask", {1, 2, 4, 8}, {1, 2, 300, 8}, {1, 2, 300, 8}, {}, {{1, 2, 4, 300}}, true},
      {"causal prefill",
       {1, 2, 70, 8},
       {1, 2, 70, 8},
       {1, 2, 70, 8},
       {{"is_causal", int64_t{1}}},
       {}},
      {"causal with past, grouped heads",
       {1, 4, 3, 8},
       {1, 2, 3, 8},
       {1, 2, 3, 8},
       {{"is_causal", int64_t{1}}, {"scale", 0.3}},
       {{}, {1, 2, 290, 8}, {1, 2, 290, 8}}},
      {"3-D layout, softcap, window",
       {2, 5, 32},
       {2, 7, 16},
       {2, 7, 12},
       [&] {
         Attributes a = heads3;
         a.set("softcap", 0.7);
         a.set("left_window_size", int64_t{2});
         a.set("right_window_size", int64_t{1});
         return a;
       }(),
       {}},
      {"scores output mode 2",
       {1, 2, 3, 8},
       {1, 2, 5, 8},
       {1, 2, 5, 8},
       {{"qk_matmul_output_mode", int64_t{2}}, {"is_causal", int64_t{1}}},
       {{1, 1, 3, 5}}},
      {"scores output mode 3",
       {1, 2, 3, 8},
       {1, 2, 5, 8},
       {1, 2, 5, 8},
       {{"qk_matmul_output_mode", int64_t{3}}},
       {{1, 1, 3, 5}},
       true},
  };
  uint64_t seed = 10;
  for (const Case &c : cases) {
    std::vector<Tensor> inputs = {random_tensor(c.q, seed++, -2, 2),
                                  random_tensor(c.k, seed++, -2, 2),
                                  random_tensor(c.v, seed++, -2, 2)};
    for (size_t i = 0; i < c.extra.size(); ++i) {
      if (c.extra[i].rank() == 0) {
        inputs.emplace_back();
        continue;
      }
      Tensor t = random_tensor(c.extra[i], seed++, -3, 1);
      if (i == 0 && c.bool_mask) {
        Tensor flags = Tensor::empty(c.extra[i], DType::Bool);
        // Row 0 keeps nothing (all masked), the others about two keys in three.
        for (int64_t j = 0; j < t.numel(); ++j)
          flags.data<bool>()[j] =
              j >= c.extra[i][c.extra[i].rank() - 1] && t.data<float>()[j] > -1.7f;
        t = flags;
      }
      inputs.push_back(t);
    }
    const auto want = call_op("attention", inputs, c.attrs, "reference");
    const auto got = call_op("attention", inputs, c.attrs, "cpu");
    ASSERT_EQ(got.size(), want.size()) << c.name;
    for (size_t o = 0; o < want.size(); ++o)
      EXPECT_TRUE(all_close(got[o], want[o], 1e-4, 1e-5)) << c.name << ", output " << o;
  }
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
