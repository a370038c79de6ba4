// resize: the CPU and Vulkan backends (Vulkan where a device exists, float32) against the
// reference over every mode; hand-computed nearest, linear and cubic results for the coordinate
// transformation modes, sizes vs scales, axes, and errors naming the op.
#include <string>
#include <vector>

#include "core/backend.h"
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

// The backends checked against the reference: the CPU, and Vulkan where it runs here.
std::vector<std::string> backends_under_test() {
  std::vector<std::string> names{"cpu"};
  if (Backend *vulkan = find_backend("vulkan"); vulkan && vulkan->available())
    names.push_back("vulkan");
  return names;
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

// The CPU and Vulkan kernels against the reference: every mode, coordinate transformation,
// nearest rounding, antialias and exclude_outside, up- and down-sampling by scales or sizes, on
// the inner axes, an outer one (channels) and all four; float32 and float64 (the CPU).
TEST(ResizeTest, KernelsMatchReferenceEverywhere) {
  const Tensor x32 = testing::random_tensor({2, 3, 7, 9}, 5);
  const Tensor x64 = testing::random_tensor({2, 3, 7, 9}, 5, -1, 1, DType::Float64);
  struct Geometry {
    Tensor scales, sizes;
    std::vector<int64_t> axes;
  };
  const std::vector<Geometry> geometries = {
      {f32({4}, {1, 1, 2, 2}), kEmpty, {}},
      {f32({4}, {1, 1, 0.6f, 0.45f}), kEmpty, {}},
      {kEmpty, Tensor::from_vector<int64_t>({4}, {2, 3, 16, 5}), {}},
      {kEmpty, Tensor::from_vector<int64_t>({4}, {1, 5, 3, 20}), {}},
      {f32({2}, {1.7f, 0.5f}), kEmpty, {2, 3}},
      {f32({1}, {2.0f}), kEmpty, {1}},
  };
  const std::vector<std::string> ctms = {"half_pixel", "align_corners", "asymmetric",
                                         "pytorch_half_pixel", "half_pixel_symmetric"};
  int cases = 0;
  for (const Geometry &g : geometries)
    for (const std::string mode : {"nearest", "linear", "cubic"})
      for (const std::string &ctm : ctms)
        for (int variant = 0; variant < 3; ++variant) {
          Attributes attrs{{"mode", mode}, {"coordinate_transformation_mode", ctm}};
          if (!g.axes.empty()) attrs.set("axes", g.axes);
          if (mode == "nearest")
            attrs.set("nearest_mode", std::string(variant == 0   ? "round_prefer_floor"
                                                  : variant == 1 ? "floor"
                                                                 : "ceil"));
          else if (variant == 1)
            attrs.set("antialias", int64_t{1});
          else if (variant == 2)
            attrs.set("exclude_outside", int64_t{1});
          for (const Tensor &x : {x32, x64}) {
            std::vector<Tensor> inputs{x, kEmpty, g.scales};
            if (g.sizes.numel()) inputs.push_back(g.sizes);
            const Tensor want = call_op("resize", inputs, attrs, "reference")[0];
            for (const std::string &backend : backends_under_test()) {
              if (backend != "cpu" && x.dtype() != DType::Float32) continue;
              const Tensor got = call_op("resize", inputs, attrs, backend)[0];
              EXPECT_TRUE(testing::all_close(got, want, 1e-5, 1e-5))
                  << backend << " " << mode << " " << ctm << " variant " << variant << " "
                  << dtype_name(x.dtype());
            }
            ++cases;
          }
        }
  EXPECT_EQ(cases, 6 * 3 * 5 * 3 * 2);
}

TEST(ResizeTest, CropAndResizeExtrapolates) {
  const Tensor x = testing::random_tensor({1, 2, 6, 6}, 8);
  const Tensor roi = f32({8}, {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f});
  const Attributes attrs{{"mode", std::string("linear")},
                         {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                         {"extrapolation_value", 3.5}};
  const std::vector<Tensor> inputs{x, roi, f32({4}, {1, 1, 1.5f, 2})};
  for (const std::string &backend : backends_under_test())
    EXPECT_TRUE(testing::all_close(call_op("resize", inputs, attrs, backend)[0],
                                   call_op("resize", inputs, attrs, "reference")[0], 1e-5, 1e-5))
        << backend;
}

}  // namespace
}  // namespace lumen
