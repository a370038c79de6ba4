// nchwc_pointwise_depthwise on the cpu and reference backends against the unfused sequence (two
// nchwc_convs) run op by op on the reference backend: depthwise strides, pads (asymmetric too),
// dilations and kernels (3x3, 5x5, 3x1), batches, more than 16 input blocks (two input passes),
// bias or none on each conv, clamp and non-clamp activations on each, and fixed band heights
// (band_rows) so bands keep and move rows, chunks of rows meet, and maps whose first window starts
// in the padding all occur on small maps; with the default bands, tall maps split by rows and short
// ones with many channels by slices of channels. Tolerance 1e-4 (float32 sums in another order).
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::expect_error;
using testing::random_tensor;
using Ints = std::vector<int64_t>;

struct Case {
  std::string label;
  int64_t n, c, m, h, w;  // x [n, c / 8, h, w, 8], t [n, m / 8, h, w, 8]
  Ints kernel;
  Attributes depthwise;  // strides, pads, dilations
};

std::vector<Case> cases() {
  return {
      {"3x3 s2 p1 (MobileNetV2's first block)",
       1,
       16,
       48,
       23,
       22,
       {3, 3},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"3x3 s1 p1, two images", 2, 8, 24, 9, 11, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}}},
      {"5x5 s1 p2, tall map (chunks of rows)",
       1,
       8,
       16,
       37,
       7,
       {5, 5},
       {{"pads", Ints{2, 2, 2, 2}}}},
      {"5x5 s2 asymmetric pads",
       1,
       16,
       32,
       17,
       15,
       {5, 5},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 2, 2, 1}}}},
      {"3x3 dilation 2, unpadded", 1, 8, 16, 14, 13, {3, 3}, {{"dilations", Ints{2, 2}}}},
      {"3x1 stride (2, 1)",
       1,
       8,
       16,
       12,
       10,
       {3, 1},
       {{"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 1, 0}}}},
      {"136 input channels (two passes), short map, many channels (slices)",
       1,
       136,
       160,
       4,
       5,
       {3, 3},
       {{"pads", Ints{1, 1, 1, 1}}}},
      {"three images", 3, 8, 8, 6, 6, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}}},
  };
}

struct Activations {
  std::string pointwise, depthwise;
};

Attributes with_activation(Attributes attrs, const std::string &activation) {
  if (activation.empty()) return attrs;
  attrs.set("activation", activation);
  if (activation == "clip") {
    attrs.set("activation_min", 0.0);
    attrs.set("activation_max", 0.6);
  }
  return attrs;
}

Attributes depthwise_attributes(const Case &c, const std::string &activation) {
  Attributes attrs = with_activation(c.depthwise, activation);
  attrs.set("group", c.m);
  attrs.set("kernel_shape", c.kernel);
  return attrs;
}

TEST(NchwcPointwiseDepthwiseOp, MatchesTheTwoConvsOnEveryBackend) {
  for (const Case &c : cases()) {
    const Tensor x = random_tensor({c.n, c.c / 8, c.h, c.w, 8}, 1);
    const Tensor w1 = random_tensor({c.m, c.c, 1, 1}, 2, -0.5, 0.5);
    const Tensor b1 = random_tensor({c.m}, 3, 0.1, 0.4);
    const Tensor w2 = random_tensor({c.m, 1, c.kernel[0], c.kernel[1]}, 4);
    const Tensor b2 = random_tensor({c.m}, 5, -0.4, -0.1);
    for (const Activations &a : {Activations{"", ""}, Activations{"clip", "clip"},
                                 Activations{"silu", "relu"}, Activations{"relu", "hard_swish"}})
      for (bool with_bias : {true, false}) {
        const Attributes pointwise = with_activation({}, a.pointwise);
        const Attributes depthwise = depthwise_attributes(c, a.depthwise);
        const Tensor none;
        const Tensor t =
            call_op("nchwc_conv", {x, w1, with_bias ? b1 : none}, pointwise, "reference").at(0);
        const Tensor want =
            call_op("nchwc_conv", {t, w2, with_bias ? b2 : none}, depthwise, "reference").at(0);
        Attributes fused = depthwise;
        for (const auto &[key, value] : pointwise.items()) fused.set("pointwise_" + key, value);
        for (int64_t band_rows : {0, 1, 2, 5}) {
          SCOPED_TRACE(c.label + ", activations '" + a.pointwise + "' / '" + a.depthwise +
                       "', bias " + std::to_string(with_bias) + ", band_rows " +
                       std::to_string(band_rows));
          if (band_rows > 0) fused.set("band_rows", band_rows);
          for (const char *backend : {"reference", "cpu"}) {
            const auto got =
                call_op("nchwc_pointwise_depthwise",
                        {x, w1, with_bias ? b1 : none, w2, with_bias ? b2 : none}, fused, backend);
            ASSERT_EQ(got.size(), 1u);
            EXPECT_TRUE(all_close(got[0], want, 1e-4, 1e-4)) << "backend " << backend;
          }
        }
      }
  }
}

TEST(NchwcPointwiseDepthwiseOp, BadNodesAreNamed) {
  const Case c = cases()[0];
  const Tensor x = random_tensor({1, 2, 8, 8, 8}, 6), w1 = random_tensor({16, 16, 1, 1}, 7);
  const Tensor w2 = random_tensor({16, 1, 3, 3}, 8), none;
  Attributes attrs{{"group", int64_t{16}}, {"band_rows", int64_t{0}}};
  expect_error(
      [&] {
        call_op("nchwc_pointwise_depthwise", {x, w1, none, w2}, attrs);
      },
      "band_rows must be at least 1");
  attrs.erase("band_rows");
  attrs.set("pointwise_strides", Ints{2, 2});
  expect_error(
      [&] {
        call_op("nchwc_pointwise_depthwise", {x, w1, none, w2}, attrs);
      },
      "the pointwise conv must be 1x1, one group, stride 1 and unpadded");
  attrs.erase("pointwise_strides");
  attrs.set("group", int64_t{8});
  expect_error(
      [&] {
        call_op("nchwc_pointwise_depthwise", {x, w1, none, w2}, attrs);
      },
      "the second conv must be depthwise");
}

}  // namespace
}  // namespace lumen
