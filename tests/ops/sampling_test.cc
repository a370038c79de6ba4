// grid_sample and affine_grid on the reference kernel: hand-computed samples for the modes,
// padding modes and align_corners, and errors naming the op.
#include <cmath>
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

Tensor grid_sample(const Tensor &x, const Tensor &grid, const Attributes &attrs) {
  return call_op("grid_sample", {x, grid}, attrs, "reference").at(0);
}

const Tensor kX = f32({1, 1, 2, 2}, {1, 2, 3, 4});

TEST(GridSampleTest, LinearAlignCorners) {
  // (x, y) = (0, 0) is the centre: 2.5; (-1, -1) is pixel [0][0]; (1, -1) is pixel [0][1].
  expect_values(grid_sample(kX, f32({1, 1, 3, 2}, {0, 0, -1, -1, 1, -1}),
                            {{"mode", std::string("linear")}, {"align_corners", int64_t(1)}}),
                {1, 1, 1, 3}, {2.5f, 1, 2});
}

TEST(GridSampleTest, LinearZerosPadding) {
  // align_corners 0: (-1, -1) maps to (-0.5, -0.5): a quarter of pixel [0][0], the rest zeros.
  expect_values(grid_sample(kX, f32({1, 1, 1, 2}, {-1, -1}), {}), {1, 1, 1, 1}, {0.25f});
}

TEST(GridSampleTest, NearestAndBorder) {
  // nearest: -0.5 rounds (to even) to 0 -> pixel 1; x = 2 is outside -> 0 with zeros padding.
  expect_values(
      grid_sample(kX, f32({1, 1, 2, 2}, {-1, -1, 1.5f, 0}), {{"mode", std::string("nearest")}}),
      {1, 1, 1, 2}, {1, 0});
  // border: (2, 2) -> (2.5, 2.5), clamped to (1, 1) -> pixel 4.
  expect_values(
      grid_sample(kX, f32({1, 1, 1, 2}, {2, 2}), {{"padding_mode", std::string("border")}}),
      {1, 1, 1, 1}, {4});
  // reflection: (2, -1) -> x = 2.5 reflects to 0.5, y = -0.5 stays: mean of pixels 1 and 2.
  expect_values(
      grid_sample(kX, f32({1, 1, 1, 2}, {2, -1}), {{"padding_mode", std::string("reflection")}}),
      {1, 1, 1, 1}, {1.5f});
}

TEST(GridSampleTest, CubicKeepsConstant) {
  const Tensor x = f32({1, 1, 3, 3}, std::vector<float>(9, 2.0f));
  expect_values(
      grid_sample(x, f32({1, 1, 1, 2}, {0.3f, -0.2f}),
                  {{"mode", std::string("cubic")}, {"padding_mode", std::string("border")}}),
      {1, 1, 1, 1}, {2});
}

TEST(GridSampleTest, Errors) {
  expect_error([&] { grid_sample(kX, f32({1, 2, 2}, {0, 0, 0, 0}), {}); }, "grid must have rank");
  expect_error([&] { grid_sample(kX, f32({1, 1, 1, 3}, {0, 0, 0}), {}); }, "last dim must be 2");
  expect_error(
      [&] {
        grid_sample(kX, f32({1, 1, 1, 2}, {0, 0}), {{"mode", std::string("area")}});
      },
      "unsupported mode");
}

TEST(AffineGridTest, Identity2D) {
  const Tensor theta = f32({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  const Tensor size = Tensor::from_vector<int64_t>({4}, {1, 1, 2, 2});
  expect_values(call_op("affine_grid", {theta, size}, {}, "reference").at(0), {1, 2, 2, 2},
                {-0.5f, -0.5f, 0.5f, -0.5f, -0.5f, 0.5f, 0.5f, 0.5f});
  // align_corners, with a translation of x by 1.
  const Tensor shift = f32({1, 2, 3}, {1, 0, 1, 0, 1, 0});
  expect_values(
      call_op("affine_grid", {shift, size}, {{"align_corners", int64_t(1)}}, "reference").at(0),
      {1, 2, 2, 2}, {0, -1, 2, -1, 0, 1, 2, 1});
}

TEST(AffineGridTest, Errors) {
  const Tensor theta = f32({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  expect_error(
      [&] {
        call_op("affine_grid", {theta, Tensor::from_vector<int64_t>({3}, {1, 1, 2})}, {},
                "reference");
      },
      "size must have 4 or 5 values");
  expect_error(
      [&] {
        call_op("affine_grid", {theta, Tensor::from_vector<int64_t>({5}, {1, 1, 2, 2, 2})}, {},
                "reference");
      },
      "does not match");
}

// The CPU grid_sample against the reference: 2-D and 3-D, every mode, padding and alignment, grid
// points inside, outside and far outside (and a NaN) the input.
TEST(GridSampleTest, CpuMatchesReference) {
  for (const Shape &xs : {Shape{2, 3, 7, 9}, Shape{1, 2, 4, 5, 6}}) {
    const size_t r = xs.rank() - 2;
    const Tensor x = testing::random_tensor(xs, 1);
    std::vector<int64_t> gdims{xs[0]};
    for (size_t d = 0; d < r; ++d) gdims.push_back(int64_t(3 + d));
    gdims.push_back(int64_t(r));
    const Shape gs(gdims);
    Tensor grid = testing::random_tensor(gs, 2, -1.6, 1.6);
    grid.data<float>()[0] = 40.0f;
    grid.data<float>()[1] = NAN;
    for (const char *mode : {"nearest", "linear", "cubic"})
      for (const char *pad : {"zeros", "border", "reflection"})
        for (int64_t align : {0, 1}) {
          const Attributes attrs{{"mode", std::string(mode)},
                                 {"padding_mode", std::string(pad)},
                                 {"align_corners", align}};
          const Tensor want = call_op("grid_sample", {x, grid}, attrs, "reference").at(0);
          const Tensor got = call_op("grid_sample", {x, grid}, attrs, "cpu").at(0);
          EXPECT_TRUE(testing::all_close(got, want, 1e-5, 1e-5))
              << mode << " " << pad << " " << align;
        }
  }
}

// The CPU affine_grid against the reference: 2-D and 3-D, both alignments, a size-1 dim.
TEST(AffineGridTest, CpuMatchesReference) {
  for (const auto &[theta_shape, size] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
           {{2, 2, 3}, {2, 3, 5, 7}}, {{1, 3, 4}, {1, 2, 4, 1, 6}}})
    for (int64_t align : {0, 1}) {
      const Tensor theta = testing::random_tensor(theta_shape, 3);
      const Tensor sz = Tensor::from_vector<int64_t>({int64_t(size.size())}, size);
      const Attributes attrs{{"align_corners", align}};
      EXPECT_TRUE(testing::all_close(call_op("affine_grid", {theta, sz}, attrs, "cpu").at(0),
                                     call_op("affine_grid", {theta, sz}, attrs, "reference").at(0),
                                     1e-6, 1e-6));
    }
}

}  // namespace
}  // namespace lumen
