// rnn / gru / lstm on the reference backend: hand-computed sequences (linear "Affine"
// activations make the recurrences exact), directions, layouts, sequence lengths, and errors.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;

template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

Tensor f32(const Shape &shape, const std::vector<float> &values) {
  return Tensor::from_vector(shape, values);
}

// A linear RNN: H_t = X_t * 1 + H_{t-1} * 0.5 (hidden 1, input 1).
Attributes linear(const std::string &direction) {
  return {{"hidden_size", int64_t{1}},
          {"direction", direction},
          {"activations", std::vector<std::string>{"Affine"}},
          {"activation_alpha", std::vector<double>{1.0}},
          {"activation_beta", std::vector<double>{0.0}}};
}

TEST(RnnOp, ForwardReverseBidirectional) {
  const Tensor x = f32({2, 1, 1}, {1, 2});
  const Tensor w1 = f32({1, 1, 1}, {1}), r1 = f32({1, 1, 1}, {0.5f});
  auto fwd = call_op("rnn", {x, w1, r1}, linear("forward"), "reference");
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_TRUE(all_close(fwd[0], f32({2, 1, 1, 1}, {1, 2.5f})));
  EXPECT_TRUE(all_close(fwd[1], f32({1, 1, 1}, {2.5f})));
  auto rev = call_op("rnn", {x, w1, r1}, linear("reverse"), "reference");
  EXPECT_TRUE(all_close(rev[0], f32({2, 1, 1, 1}, {2, 2})));
  EXPECT_TRUE(all_close(rev[1], f32({1, 1, 1}, {2})));
  Attributes bi = linear("bidirectional");
  auto both =
      call_op("rnn", {x, f32({2, 1, 1}, {1, 1}), f32({2, 1, 1}, {0.5f, 0.5f})}, bi, "reference");
  EXPECT_TRUE(all_close(both[0], f32({2, 2, 1, 1}, {1, 2, 2.5f, 2})));
  EXPECT_TRUE(all_close(both[1], f32({2, 1, 1}, {2.5f, 2})));
}

TEST(RnnOp, DefaultTanhBiasInitialStateAndClip) {
  const Tensor x = f32({1, 1, 1}, {1});
  // tanh(1 * 2 + 0.5 * 1 + 0.25 + 0.25) = tanh(3); clip 1 gives tanh(1).
  const std::vector<Tensor> in{
      x,        f32({1, 1, 1}, {2}), f32({1, 1, 1}, {0.5f}), f32({1, 2}, {0.25f, 0.25f}),
      Tensor(), f32({1, 1, 1}, {1})};
  auto out = call_op("rnn", in, {}, "reference");
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {float(std::tanh(3.0))})));
  out = call_op("rnn", in, {{"clip", 1.0}}, "reference");
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {float(std::tanh(1.0))})));
}

TEST(RnnOp, SequenceLensAndLayout1) {
  // Batch 2 with lengths 2 and 1; layout 1: X is [batch, seq, input].
  const Tensor x = f32({2, 2, 1}, {1, 2, 10, 20});
  Attributes attrs = linear("forward");
  attrs.set("layout", int64_t{1});
  auto out = call_op("rnn",
                     {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0.5f}), Tensor(),
                      Tensor::from_vector<int32_t>({2}, {2, 1})},
                     attrs, "reference");
  EXPECT_TRUE(all_close(out[0], f32({2, 2, 1, 1}, {1, 2.5f, 10, 0})));
  EXPECT_TRUE(all_close(out[1], f32({2, 1, 1}, {2.5f, 10})));
  // Reverse over each row's valid steps.
  attrs.set("direction", std::string("reverse"));
  out = call_op("rnn",
                {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0.5f}), Tensor(),
                 Tensor::from_vector<int32_t>({2}, {2, 1})},
                attrs, "reference");
  EXPECT_TRUE(all_close(out[0], f32({2, 2, 1, 1}, {2, 2, 10, 0})));
  EXPECT_TRUE(all_close(out[1], f32({2, 1, 1}, {2, 10})));
}

TEST(RnnOp, GruZeroWeights) {
  // All weights zero: z = r = 0.5, candidate tanh(0) = 0, so H halves each step.
  const Tensor x = f32({2, 1, 1}, {3, 4});
  const Tensor w = f32({1, 3, 1}, {0, 0, 0}), r = f32({1, 3, 1}, {0, 0, 0});
  for (int64_t lbr : {0, 1}) {
    auto out = call_op("gru", {x, w, r, Tensor(), Tensor(), f32({1, 1, 1}, {1})},
                       {{"linear_before_reset", lbr}}, "reference");
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(all_close(out[0], f32({2, 1, 1, 1}, {0.5f, 0.25f})));
    EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {0.25f})));
  }
}

TEST(RnnOp, GruLinearBeforeReset) {
  // Affine gates (z = r = pre-activation). hidden 1, input 1, H0 = 1, X = 1, every W = 1,
  // R_z = R_r = 0, R_h = 2, Rb_h = 1. z = 1, r = 1... use z = W_z x = 0 instead:
  // W = [0 (z), 0.5 (r), 1 (h)]; r = 0.5.
  //   linear_before_reset=0: h~ = 1 + (r * H0) * 2 + 1 = 3;  H = (1 - 0) * 3 + 0 = 3
  //   linear_before_reset=1: h~ = 1 + r * (H0 * 2 + 1) = 2.5
  const Tensor x = f32({1, 1, 1}, {1});
  const Tensor w = f32({1, 3, 1}, {0, 0.5f, 1}), r = f32({1, 3, 1}, {0, 0, 2});
  const Tensor b = f32({1, 6}, {0, 0, 0, 0, 0, 1});
  Attributes attrs{{"activations", std::vector<std::string>{"Affine", "Affine"}},
                   {"activation_alpha", std::vector<double>{1.0, 1.0}},
                   {"activation_beta", std::vector<double>{0.0, 0.0}}};
  auto out = call_op("gru", {x, w, r, b, Tensor(), f32({1, 1, 1}, {1})}, attrs, "reference");
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {3})));
  attrs.set("linear_before_reset", int64_t{1});
  out = call_op("gru", {x, w, r, b, Tensor(), f32({1, 1, 1}, {1})}, attrs, "reference");
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {2.5f})));
}

TEST(RnnOp, LstmZeroWeightsAndPeepholes) {
  // Zero weights: i = f = o = 0.5, c~ = 0, so C = 0.5 * C0 and H = 0.5 * tanh(C).
  const Tensor x = f32({1, 1, 1}, {7});
  const Tensor w = f32({1, 4, 1}, {0, 0, 0, 0}), r = f32({1, 4, 1}, {0, 0, 0, 0});
  auto out = call_op("lstm", {x, w, r, Tensor(), Tensor(), Tensor(), f32({1, 1, 1}, {1})}, {},
                     "reference");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(all_close(out[2], f32({1, 1, 1}, {0.5f})));
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {float(0.5 * std::tanh(0.5))})));
  // Peepholes P = [Pi, Po, Pf] = [0, 2, 0]: o = sigmoid(2 * C) with C = 0.5.
  out = call_op(
      "lstm", {x, w, r, Tensor(), Tensor(), Tensor(), f32({1, 1, 1}, {1}), f32({1, 3}, {0, 2, 0})},
      {}, "reference");
  const double o = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_TRUE(all_close(out[1], f32({1, 1, 1}, {float(o * std::tanh(0.5))})));
}

TEST(RnnOp, Errors) {
  const Tensor x = f32({2, 1, 1}, {1, 2});
  EXPECT_NE(error_of([&] {
              call_op("lstm", {x, f32({1, 3, 1}, {0, 0, 0}), f32({1, 4, 1}, {0, 0, 0, 0})},
                      {{"hidden_size", int64_t{1}}}, "reference");
            }).find("W has shape [1, 3, 1]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              call_op("rnn", {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1})},
                      {{"direction", std::string("sideways")}}, "reference");
            }).find("direction"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              call_op("rnn", {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1})},
                      {{"activations", std::vector<std::string>{"Swish"}}}, "reference");
            }).find("'Swish' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              call_op("rnn",
                      {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1}), Tensor(),
                       Tensor::from_vector<int32_t>({1}, {5})},
                      {}, "reference");
            }).find("sequence_lens"),
            std::string::npos);
}

}  // namespace
}  // namespace lumen
