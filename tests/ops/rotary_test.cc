// rotary_embedding and bit_cast on the reference kernel: hand-computed rotations (split and
// interleaved halves, position ids, 3-D input) and errors naming the op; the CPU rotary kernel
// against the reference.
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

// The CPU kernel against the reference: 4-D and 3-D inputs, split and interleaved pairs, partial
// rotation, position ids (int64 and int32), 2-D and 3-D caches; out-of-range ids named.
TEST(RotaryEmbeddingTest, CpuMatchesReference) {
  const auto same = [](const std::vector<Tensor> &inputs, const Attributes &attrs) {
    const Tensor want = call_op("rotary_embedding", inputs, attrs, "reference").at(0);
    const Tensor got = call_op("rotary_embedding", inputs, attrs, "cpu").at(0);
    EXPECT_TRUE(testing::all_close(got, want, 1e-6, 1e-6));
  };
  const Tensor x4 = testing::random_tensor({2, 3, 5, 16}, 1),
               x3 = testing::random_tensor({2, 5, 48}, 2);
  const Tensor cos8 = testing::random_tensor({7, 8}, 3), sin8 = testing::random_tensor({7, 8}, 4);
  const Tensor cos3 = testing::random_tensor({2, 5, 4}, 5),
               sin3 = testing::random_tensor({2, 5, 4}, 6);
  Tensor pos = Tensor::empty({2, 5}, DType::Int64);
  for (int64_t i = 0; i < 10; ++i) pos.data<int64_t>()[i] = (i * 3) % 7;
  Tensor pos32 = Tensor::empty({2, 5}, DType::Int32);
  for (int64_t i = 0; i < 10; ++i) pos32.data<int32_t>()[i] = int32_t((i * 5) % 7);
  for (int64_t interleaved : {0, 1}) {
    const Attributes attrs{{"interleaved", interleaved}};
    same({x4, cos8, sin8}, attrs);
    same({x4, cos8, sin8, pos}, attrs);
    same({x4, cos8, sin8, pos32}, attrs);
    Attributes partial = attrs;
    partial.set("rotary_embedding_dim", int64_t{8});
    same({x4, cos3, sin3}, partial);
    partial.set("num_heads", int64_t{3});
    same({x3, cos3, sin3}, partial);
  }
  pos.data<int64_t>()[4] = 7;
  expect_error(
      [&] {
        call_op("rotary_embedding", {x4, cos8, sin8, pos}, {}, "cpu");
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
