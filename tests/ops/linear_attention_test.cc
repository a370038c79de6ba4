// linear_attention and causal_conv_with_state on the reference kernels: hand-computed values and
// errors naming the op.
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
}

std::vector<Tensor> run(const std::string &op, const std::vector<Tensor> &inputs,
                        const Attributes &attrs = {}) {
  return call_op(op, inputs, attrs, "reference");
}

template <class Fn>
void expect_error(Fn &&fn, const std::string &needle) {
  try {
    fn();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(LinearAttentionOp, LinearRuleAccumulatesOuterProducts) {
  // One head, dk = dv = 1, scale 1: state_t = sum k*v, y_t = q_t * state_t.
  const Tensor q = f32({1, 2, 1}, {1, 2}), k = f32({1, 2, 1}, {3, 4}), v = f32({1, 2, 1}, {5, 6});
  const Attributes attrs{{"q_num_heads", int64_t(1)},
                         {"kv_num_heads", int64_t(1)},
                         {"scale", 1.0},
                         {"update_rule", std::string("linear")}};
  const auto out = run("linear_attention", {q, k, v}, attrs);
  // state: 15, then 15 + 24 = 39; y = [1*15, 2*39].
  EXPECT_TRUE(all_close(out[0], f32({1, 2, 1}, {15, 78})));
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1, 1}, {39})));
}

TEST(LinearAttentionOp, GatedDeltaWithPastStateAndGqa) {
  // Two query heads share one kv head; dk = dv = 1; default scale 1/sqrt(1) = 1.
  const Tensor q = f32({1, 1, 2}, {1, -1}), k = f32({1, 1, 1}, {2}), v = f32({1, 1, 1}, {3});
  const Tensor past = f32({1, 1, 1, 1}, {4});
  const Tensor decay = f32({1, 1, 1}, {0});  // exp(0) = 1
  const Tensor beta = f32({1, 1, 1}, {0.5f});
  const Attributes attrs{{"q_num_heads", int64_t(2)}, {"kv_num_heads", int64_t(1)}};
  const auto out = run("linear_attention", {q, k, v, past, decay, beta}, attrs);
  // v' = 0.5 * (3 - 4*2) = -2.5; state = 4 + 2 * -2.5 = -1; y = [-1, 1].
  EXPECT_TRUE(all_close(out[0], f32({1, 1, 2}, {-1, 1})));
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1, 1}, {-1})));
}

TEST(LinearAttentionOp, Errors) {
  const Tensor q = f32({1, 1, 2}, {1, 1}), k = f32({1, 1, 2}, {1, 1}), v = f32({1, 1, 2}, {1, 1});
  expect_error(
      [&] {
        run("linear_attention", {q, k, v},
            {{"q_num_heads", int64_t(3)}, {"kv_num_heads", int64_t(2)}});
      },
      "linear_attention");
  expect_error(
      [&] {
        run("linear_attention", {q, k, v},
            {{"q_num_heads", int64_t(1)}, {"kv_num_heads", int64_t(1)}});
      },
      "requires the decay input");
  expect_error(
      [&] {
        run("linear_attention", {q, k, v},
            {{"q_num_heads", int64_t(1)},
             {"kv_num_heads", int64_t(1)},
             {"update_rule", std::string("bogus")}});
      },
      "not supported");
}

TEST(CausalConvWithStateOp, PadsWithPastStateAndKeepsTail) {
  // B = 1, C = 1, L = 3, K = 2: y_i = w0 * p_i + w1 * p_(i+1) + bias over p = [past, x].
  const Tensor x = f32({1, 1, 3}, {1, 2, 3}), w = f32({1, 1, 2}, {10, 1});
  const Tensor bias = f32({1}, {0.5f}), past = f32({1, 1, 1}, {7});
  auto out = run("causal_conv_with_state", {x, w, bias, past});
  EXPECT_TRUE(all_close(out[0], f32({1, 1, 3}, {71.5f, 12.5f, 23.5f})));
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {3})));
  // No past state: zeros.
  out = run("causal_conv_with_state", {x, w});
  EXPECT_TRUE(all_close(out[0], f32({1, 1, 3}, {1, 12, 23})));
}

TEST(CausalConvWithStateOp, SiluAndErrors) {
  const Tensor x = f32({1, 1, 1}, {2}), w = f32({1, 1, 1}, {1});
  const auto out = run("causal_conv_with_state", {x, w}, {{"activation", std::string("silu")}});
  EXPECT_TRUE(all_close(out[0], f32({1, 1, 1}, {float(2.0 / (1.0 + std::exp(-2.0)))})));
  EXPECT_EQ(out[1].shape(), Shape({1, 1, 0}));
  expect_error(
      [&] {
        run("causal_conv_with_state", {x, f32({2, 1, 1}, {1, 1})});
      },
      "causal_conv_with_state");
  expect_error(
      [&] {
        run("causal_conv_with_state", {x, w}, {{"activation", std::string("relu")}});
      },
      "not supported");
}

}  // namespace
}  // namespace lumen
