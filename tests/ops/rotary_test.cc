// rotary_embedding and bit_cast on the reference kernel: hand-computed rotations (split and
// interleaved halves, position ids, 3-D input) and errors naming the op.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
}

void expect_values(const Tensor &t, const Shape &shape, const std::vector<float> &want) {
  ASSERT_EQ(t.shape(), shape);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], 1e-5) << i;
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

// cos = (0, 1), sin = (1, 0): the first pair turns by 90 degrees, the second stays.
const Tensor kCos = f32({1, 1, 2}, {0, 1});
const Tensor kSin = f32({1, 1, 2}, {1, 0});

TEST(RotaryEmbeddingTest, SplitAndInterleaved) {
  const Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  // Pairs (0, 2) and (1, 3).
  expect_values(call_op("rotary_embedding", {x, kCos, kSin}, {}, "reference").at(0), {1, 1, 1, 4},
                {-3, 2, 1, 4});
  // Pairs (0, 1) and (2, 3).
  expect_values(
      call_op("rotary_embedding", {x, kCos, kSin}, {{"interleaved", int64_t(1)}}, "reference")
          .at(0),
      {1, 1, 1, 4}, {-2, 1, 3, 4});
}

TEST(RotaryEmbeddingTest, PositionIdsPartialAnd3D) {
  // 3-D input with 2 heads of size 4, rotary_embedding_dim 2 (one pair per head), caches
  // indexed by position id 1.
  const Tensor x = f32({1, 1, 8}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor cos = f32({2, 1}, {1, 0}), sin = f32({2, 1}, {0, 1});
  const Tensor pos = Tensor::from_vector<int64_t>({1, 1}, {1});
  expect_values(
      call_op("rotary_embedding", {x, cos, sin, pos},
              {{"num_heads", int64_t(2)}, {"rotary_embedding_dim", int64_t(2)}}, "reference")
          .at(0),
      {1, 1, 8}, {-2, 1, 3, 4, -6, 5, 7, 8});
}

TEST(RotaryEmbeddingTest, Errors) {
  const Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  expect_error(
      [&] {
        call_op("rotary_embedding", {x, kCos, kSin}, {}, "reference");
      },
      "needs the num_heads");
  const Tensor cos = f32({1, 2}, {1, 1});
  expect_error(
      [&] {
        call_op("rotary_embedding", {x, cos, cos, Tensor::from_vector<int64_t>({1, 1}, {3})},
                {{"num_heads", int64_t(1)}}, "reference");
      },
      "out of range");
}

TEST(BitCastTest, ReinterpretsBytes) {
  const Tensor y =
      call_op("bit_cast", {f32({2}, {1.0f, -2.0f})}, {{"to", std::string("int32")}}, "reference")
          .at(0);
  ASSERT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(y.data<int32_t>()[0], 0x3f800000);
  EXPECT_EQ(uint32_t(y.data<int32_t>()[1]), 0xc0000000u);
  expect_error(
      [&] {
        call_op("bit_cast", {f32({1}, {1})}, {{"to", std::string("int64")}}, "reference");
      },
      "the sizes differ");
}

TEST(SwiGluTest, Values) {
  // a = 0: 0; a = 2, alpha 1: 2 * sigmoid(2) * 3.
  const Tensor y = call_op("swiglu", {f32({2}, {0, 2}), f32({2}, {5, 3})}, {}, "reference").at(0);
  EXPECT_NEAR(y.data<float>()[0], 0, 1e-6);
  EXPECT_NEAR(y.data<float>()[1], 2.0 / (1.0 + std::exp(-2.0)) * 3.0, 1e-5);
  expect_error(
      [&] {
        call_op("swiglu", {f32({2}, {0, 2}), f32({1}, {5})}, {}, "reference");
      },
      "one shape");
}

}  // namespace
}  // namespace lumen
