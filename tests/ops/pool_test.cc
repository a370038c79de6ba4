// Pooling: hand-computed values, CPU vs reference over strides, pads, dilations, ceil_mode and
// count_include_pad, and errors. Tolerances CPU vs reference: rtol 1e-5, atol 1e-5 for float32
// (windows are small sums, the reference accumulates in double), 1e-12 for float64.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::cpu_matches_reference;
using testing::random_tensor;
using V = std::vector<int64_t>;

constexpr double kRtol = 1e-5, kAtol = 1e-5;
constexpr double kRtol64 = 1e-12, kAtol64 = 1e-12;

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

void expect_both(const std::string &op, const Tensor &x, const Attributes &attrs,
                 const Tensor &expected) {
  for (const char *backend : {"reference", "cpu"}) {
    const auto out = call_op(op, {x}, attrs, backend);
    EXPECT_TRUE(all_close(out[0], expected, 1e-6, 1e-6)) << op << " on " << backend;
  }
}

const Tensor kGrid = f32({1, 1, 4, 4}, {1, 5, 2, 0,  //
                                        3, 4, 9, 1,  //
                                        7, 0, 2, 8,  //
                                        6, 3, 1, 4});

TEST(PoolOp, HandComputedMaxPool) {
  expect_both("max_pool2d", kGrid, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}},
              f32({1, 1, 2, 2}, {5, 9, 7, 8}));
  // 3x3 windows, stride 1.
  expect_both("max_pool2d", kGrid, {{"kernel_shape", V{3, 3}}}, f32({1, 1, 2, 2}, {9, 9, 9, 9}));
  // 2x2 dilated by 2: taps (i, j), (i, j+2), (i+2, j), (i+2, j+2).
  expect_both("max_pool2d", kGrid, {{"kernel_shape", V{2, 2}}, {"dilations", V{2, 2}}},
              f32({1, 1, 2, 2}, {7, 8, 9, 4}));
  // Padding never wins, even against negative values.
  expect_both("max_pool2d", f32({1, 1, 2, 2}, {-1, -2, -3, -4}),
              {{"kernel_shape", V{2, 2}}, {"pads", V{1, 1, 1, 1}}},
              f32({1, 1, 3, 3}, {-1, -1, -2, -1, -1, -2, -3, -3, -4}));
}

TEST(PoolOp, HandComputedAvgPool) {
  expect_both("avg_pool2d", kGrid, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}},
              f32({1, 1, 2, 2}, {3.25f, 3, 4, 3.75f}));
  // Padding excluded (default) or counted.
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attributes padded{{"kernel_shape", V{2, 2}}, {"pads", V{1, 1, 1, 1}}};
  expect_both("avg_pool2d", x, padded, f32({1, 1, 3, 3}, {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}));
  Attributes counted = padded;
  counted.set("count_include_pad", int64_t{1});
  expect_both("avg_pool2d", x, counted,
              f32({1, 1, 3, 3}, {0.25f, 0.75f, 0.5f, 1, 2.5f, 1.5f, 0.75f, 1.75f, 1}));
}

TEST(PoolOp, HandComputedCeilMode) {
  Tensor x = Tensor::empty({1, 1, 5, 5});
  for (int i = 0; i < 25; ++i) x.data<float>()[i] = static_cast<float>(i);
  const Attributes attrs{
      {"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}, {"ceil_mode", int64_t{1}}};
  // The last row and column of windows hang over the edge and see only what is inside.
  expect_both("max_pool2d", x, attrs, f32({1, 1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24}));
  expect_both("avg_pool2d", x, attrs,
              f32({1, 1, 3, 3}, {3, 5, 6.5f, 13, 15, 16.5f, 20.5f, 22.5f, 24}));
  // Positions past the end padding are not counted even with count_include_pad.
  Attributes counted = attrs;
  counted.set("count_include_pad", int64_t{1});
  expect_both("avg_pool2d", x, counted,
              f32({1, 1, 3, 3}, {3, 5, 6.5f, 13, 15, 16.5f, 20.5f, 22.5f, 24}));
  // Without ceil_mode the partial windows are dropped.
  expect_both("max_pool2d", x, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}},
              f32({1, 1, 2, 2}, {6, 8, 16, 18}));
}

TEST(PoolOp, CeilModeDropsWindowStartingInEndPadding) {
  // in 4, kernel 2, stride 2, end pad 1: ceil((4 + 1 - 2) / 2) + 1 = 3 windows, but the third
  // would start at 4, inside the end padding, so ONNX and PyTorch drop it.
  const Attributes attrs{{"kernel_shape", V{2, 2}},
                         {"strides", V{2, 2}},
                         {"pads", V{0, 0, 1, 1}},
                         {"ceil_mode", int64_t{1}}};
  expect_both("max_pool2d", kGrid, attrs, f32({1, 1, 2, 2}, {5, 9, 7, 8}));
  // With begin padding 1 the third window starts at 3, inside the input, and is kept.
  const auto out = call_op("max_pool2d", {Tensor::zeros({1, 1, 4, 4})},
                           {{"kernel_shape", V{2, 2}},
                            {"strides", V{2, 2}},
                            {"pads", V{1, 1, 1, 1}},
                            {"ceil_mode", int64_t{1}}});
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 3, 3}));
}

TEST(PoolOp, HandComputedGlobal) {
  const Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, 0, 2});
  expect_both("global_avg_pool", x, {}, f32({1, 2, 1, 1}, {2.5f, -1}));
  expect_both("global_max_pool", x, {}, f32({1, 2, 1, 1}, {4, 2}));
}

TEST(PoolOp, MaxPropagatesNan) {
  Tensor x = random_tensor({1, 2, 4, 4}, 3);
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  const Attributes attrs{{"kernel_shape", V{2, 2}}};
  EXPECT_TRUE(cpu_matches_reference("max_pool2d", {x}, attrs));
  const auto out = call_op("max_pool2d", {x}, attrs, "cpu");
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
  EXPECT_TRUE(cpu_matches_reference("global_max_pool", {x}));
  EXPECT_TRUE(std::isnan(call_op("global_max_pool", {x}, {}, "cpu")[0].data<float>()[0]));
}

// ResNet's 3x3 stride-2 padded max pool over planes wider than a vector, NaNs at the first,
// a middle and the last tap of windows: every window holding one must be NaN.
TEST(PoolOp, MaxPropagatesNanInWideStridedWindows) {
  Tensor x = random_tensor({1, 2, 20, 37}, 4);
  for (int64_t i : {0, 5 * 37 + 17, 20 * 37 - 1, 400 + 9 * 37 + 36})
    x.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  const Attributes attrs{{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}};
  EXPECT_TRUE(cpu_matches_reference("max_pool2d", {x}, attrs));
  Attributes avg = attrs;
  EXPECT_TRUE(cpu_matches_reference("avg_pool2d", {x}, avg));
}

struct PoolCase {
  Shape x;
  Attributes attrs;
};

TEST(PoolOp, CpuMatchesReference) {
  const std::vector<PoolCase> cases = {
      {{2, 3, 8, 8}, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}}},
      {{2, 3, 8, 8}, {{"kernel_shape", V{3, 3}}}},
      {{1, 2, 9, 7}, {{"kernel_shape", V{3, 2}}, {"strides", V{2, 1}}}},
      {{1, 2, 9, 7}, {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 0, 2, 1}}}},
      {{1, 2, 9, 7},
       {{"kernel_shape", V{3, 3}},
        {"strides", V{2, 2}},
        {"pads", V{1, 0, 2, 1}},
        {"count_include_pad", int64_t{1}}}},
      {{1, 2, 10, 10},
       {{"kernel_shape", V{3, 3}}, {"strides", V{3, 3}}, {"ceil_mode", int64_t{1}}}},
      {{1, 2, 10, 11},
       {{"kernel_shape", V{3, 2}},
        {"strides", V{2, 3}},
        {"pads", V{1, 1, 1, 0}},
        {"ceil_mode", int64_t{1}},
        {"count_include_pad", int64_t{1}}}},
      {{1, 3, 6, 6}, {{"kernel_shape", V{1, 1}}}},
      {{1, 3, 6, 6}, {{"kernel_shape", V{1, 1}}, {"strides", V{2, 2}}}},
      {{1, 1, 1, 1}, {{"kernel_shape", V{1, 1}}}},
      {{1, 1, 1, 1}, {{"kernel_shape", V{2, 2}}, {"pads", V{1, 1, 0, 0}}}},
      {{0, 3, 5, 5}, {{"kernel_shape", V{2, 2}}}},
      {{2, 0, 5, 5}, {{"kernel_shape", V{2, 2}}}},
      {{4, 16, 32, 32}, {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}},
  };
  uint64_t seed = 1;
  for (const char *op : {"max_pool2d", "avg_pool2d"})
    for (const PoolCase &c : cases) {
      SCOPED_TRACE(std::string(op) + " x " + c.x.to_string() + " " + c.attrs.to_string());
      EXPECT_TRUE(cpu_matches_reference(op, {random_tensor(c.x, seed)}, c.attrs, kRtol, kAtol));
      EXPECT_TRUE(cpu_matches_reference(op, {random_tensor(c.x, seed, -1, 1, DType::Float64)},
                                        c.attrs, kRtol64, kAtol64));
      ++seed;
    }
  // Dilations (max only).
  for (const Attributes &attrs :
       std::vector<Attributes>{{{"kernel_shape", V{2, 2}}, {"dilations", V{2, 2}}},
                               {{"kernel_shape", V{3, 2}},
                                {"dilations", V{2, 3}},
                                {"pads", V{2, 1, 1, 2}},
                                {"strides", V{2, 1}},
                                {"ceil_mode", int64_t{1}}}}) {
    SCOPED_TRACE(attrs.to_string());
    EXPECT_TRUE(cpu_matches_reference("max_pool2d", {random_tensor({2, 3, 11, 10}, seed++)}, attrs,
                                      kRtol, kAtol));
  }
  for (const char *op : {"global_avg_pool", "global_max_pool"})
    for (const Shape &shape : std::vector<Shape>{
             {2, 3, 5, 5}, {1, 1, 1, 1}, {0, 3, 4, 4}, {2, 0, 4, 4}, {8, 64, 14, 14}, {2, 3, 7}}) {
      SCOPED_TRACE(std::string(op) + " x " + shape.to_string());
      EXPECT_TRUE(cpu_matches_reference(op, {random_tensor(shape, seed)}, {}, kRtol, kAtol));
      EXPECT_TRUE(cpu_matches_reference(op, {random_tensor(shape, seed, -1, 1, DType::Float64)}, {},
                                        kRtol64, kAtol64));
      ++seed;
    }
}

TEST(PoolOp, OutputShapes) {
  auto shape_of = [](const char *op, const Shape &x, const Attributes &attrs) {
    return call_op(op, {Tensor::zeros(x)}, attrs, "reference")[0].shape();
  };
  EXPECT_EQ(shape_of("max_pool2d", {1, 64, 112, 112},
                     {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
            (Shape{1, 64, 56, 56}));
  EXPECT_EQ(shape_of("avg_pool2d", {1, 1, 6, 6},
                     {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"ceil_mode", int64_t{1}}}),
            (Shape{1, 1, 3, 3}));
  EXPECT_EQ(shape_of("global_avg_pool", {2, 5, 7, 3}, {}), (Shape{2, 5, 1, 1}));
  EXPECT_EQ(shape_of("global_max_pool", {2, 5, 7}, {}), (Shape{2, 5, 1}));
}

TEST(PoolOp, Errors) {
  struct Bad {
    const char *op;
    Shape x;
    Attributes attrs;
    const char *expect;
  };
  const std::vector<Bad> cases = {
      {"max_pool2d", {1, 1, 4, 4}, {}, "kernel_shape"},
      {"avg_pool2d", {1, 1, 4, 4}, {{"kernel_shape", V{2}}}, "kernel_shape"},
      {"max_pool2d", {1, 1, 2, 2}, {{"kernel_shape", V{3, 3}}}, "larger than the padded input"},
      {"avg_pool2d", {1, 1, 2, 5}, {{"kernel_shape", V{3, 3}}}, "larger than the padded input"},
      {"max_pool2d",
       {1, 1, 4, 4},
       {{"kernel_shape", V{2, 2}}, {"dilations", V{4, 4}}},
       "larger than the padded input"},
      {"max_pool2d", {1, 4, 4}, {{"kernel_shape", V{2, 2}}}, "4-D"},
      {"avg_pool2d",
       {1, 1, 4, 4},
       {{"kernel_shape", V{2, 2}}, {"dilations", V{2, 2}}},
       "dilations"},
      {"max_pool2d", {1, 1, 4, 4}, {{"kernel_shape", V{2, 2}}, {"strides", V{0, 1}}}, "strides"},
      {"global_avg_pool", {1, 4}, {}, "spatial"},
      {"global_max_pool", {3}, {}, "spatial"},
  };
  for (const Bad &c : cases) {
    EXPECT_THROW(call_op(c.op, {Tensor::zeros(c.x)}, c.attrs), Error);
    const std::string msg = error_of([&] { call_op(c.op, {Tensor::zeros(c.x)}, c.attrs); });
    EXPECT_NE(msg.find(c.op), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace lumen
