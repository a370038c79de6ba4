// resize on the reference kernel: hand-computed nearest, linear and cubic results for the
// coordinate transformation modes, sizes vs scales, axes, and errors naming the op.
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
}
const Tensor kEmpty = Tensor::empty({0}, DType::Float32);

Tensor resize(const std::vector<Tensor> &inputs, const Attributes &attrs) {
  return call_op("resize", inputs, attrs, "reference").at(0);
}

void expect_values(const Tensor &t, const Shape &shape, const std::vector<float> &want) {
  ASSERT_EQ(t.shape(), shape);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], 1e-5) << i;
}

TEST(ResizeTest, NearestHalfPixel) {
  const Tensor x = f32({1, 1, 1, 2}, {1, 2});
  // Source coordinates -0.25, 0.25, 0.75, 1.25 round (prefer floor) to 0, 0, 1, 1.
  expect_values(resize({x, kEmpty, f32({4}, {1, 1, 1, 2})}, {{"mode", std::string("nearest")}}),
                {1, 1, 1, 4}, {1, 1, 2, 2});
  // nearest_mode ceil with asymmetric: x = 0, 0.5, 1, 1.5 -> 0, 1, 1, 2 (clamped to 1).
  expect_values(resize({x, kEmpty, f32({4}, {1, 1, 1, 2})},
                       {{"mode", std::string("nearest")},
                        {"coordinate_transformation_mode", std::string("asymmetric")},
                        {"nearest_mode", std::string("ceil")}}),
                {1, 1, 1, 4}, {1, 2, 2, 2});
}

TEST(ResizeTest, LinearModes) {
  const Tensor x = f32({1, 1, 1, 2}, {1, 3});
  // align_corners to 3 positions: x = 0, 0.5, 1.
  const Tensor sizes = Tensor::from_vector<int64_t>({4}, {1, 1, 1, 3});
  expect_values(resize({x, kEmpty, kEmpty, sizes},
                       {{"mode", std::string("linear")},
                        {"coordinate_transformation_mode", std::string("align_corners")}}),
                {1, 1, 1, 3}, {1, 2, 3});
  // asymmetric x2: x = 0, 0.5, 1, 1.5 (edge-clamped).
  expect_values(resize({x, kEmpty, f32({4}, {1, 1, 1, 2})},
                       {{"mode", std::string("linear")},
                        {"coordinate_transformation_mode", std::string("asymmetric")}}),
                {1, 1, 1, 4}, {1, 2, 3, 3});
  // half_pixel x2: x = -0.25 (clamped: 1), 0.25, 0.75, 1.25 (clamped: 3).
  expect_values(resize({x, kEmpty, f32({4}, {1, 1, 1, 2})}, {{"mode", std::string("linear")}}),
                {1, 1, 1, 4}, {1, 1.5f, 2.5f, 3});
  // axes: only the last axis, sizes [3].
  expect_values(resize({x, kEmpty, kEmpty, Tensor::from_vector<int64_t>({1}, {3})},
                       {{"mode", std::string("linear")},
                        {"axes", std::vector<int64_t>{3}},
                        {"coordinate_transformation_mode", std::string("align_corners")}}),
                {1, 1, 1, 3}, {1, 2, 3});
}

TEST(ResizeTest, CubicAtIntegerPositionsKeepsValues) {
  // Scale 1 on every axis is the identity; asymmetric x2 hits every source point at even outputs.
  const Tensor x = f32({1, 4}, {1, 5, 2, 7});
  const Tensor y = resize({x, kEmpty, f32({2}, {1, 2})},
                          {{"mode", std::string("cubic")},
                           {"coordinate_transformation_mode", std::string("asymmetric")}});
  ASSERT_EQ(y.shape(), (Shape{1, 8}));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y.data<float>()[2 * i], x.data<float>()[i], 1e-5);
}

TEST(ResizeTest, Errors) {
  const Tensor x = f32({1, 2}, {1, 2});
  expect_error(
      [&] {
        resize({x, kEmpty, f32({2}, {1, 2})}, {{"mode", std::string("area")}});
      },
      "unsupported mode");
  expect_error([&] { resize({x, kEmpty, f32({3}, {1, 2, 2})}, {}); }, "scales must have 2");
  expect_error([&] { resize({x, kEmpty, f32({2}, {1, -2})}, {}); }, "scales must be > 0");
  expect_error([&] { resize({x}, {}); }, "exactly one of scales and sizes");
}

}  // namespace
}  // namespace lumen
