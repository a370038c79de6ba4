// fused_conv_max_pool on the cpu and reference backends against the unfused sequence (fused_conv,
// then max_pool2d) run op by op on the reference backend: conv and pool strides, pads, dilations,
// ceil mode, batches, channel counts that are not a multiple of the vector width, bias or none,
// relu / clip / no activation, and fixed band heights (band_rows) so bands, the rows they share
// and strip boundaries all occur on small maps; NaN must survive the pool. Tolerance 1e-4 (float32
// sums in another order); float64 runs on the reference backend only, 1e-10.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/backend.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::expect_error;
using testing::random_tensor;
using Ints = std::vector<int64_t>;

struct Case {
  std::string label;
  Shape x, w;
  Attributes conv, pool;  // the pool's attributes unprefixed
};

std::vector<Case> cases() {
  const Attributes pool3s2{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}};
  return {
      {"squeezenet-like 3x3 s2, pool 3x3 s2",
       {1, 3, 33, 31},
       {16, 3, 3, 3},
       {{"strides", Ints{2, 2}}},
       pool3s2},
      {"padded conv and pool, 12 channels",
       {2, 3, 20, 22},
       {12, 3, 3, 3},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"stride-1 conv, pool 2x2 s2 ceil mode",
       {1, 2, 15, 13},
       {9, 2, 3, 3},
       {{"pads", Ints{1, 0, 1, 2}}},
       {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}},
      {"dilated conv, dilated pool",
       {1, 4, 24, 21},
       {8, 4, 3, 2},
       {{"dilations", Ints{2, 1}}, {"strides", Ints{1, 2}}},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{1, 2}}, {"dilations", Ints{2, 1}}}},
      // Conv outputs 2 wide: a micro-kernel panel of 6 pixels spans three output rows.
      {"narrow map", {2, 2, 13, 4}, {5, 2, 3, 3}, {}, {{"kernel_shape", Ints{2, 2}}}},
      {"5x5 s3 conv, overlapping stride-1 pool",
       {1, 1, 40, 38},
       {20, 1, 5, 5},
       {{"strides", Ints{3, 3}}, {"pads", Ints{2, 2, 2, 2}}},
       {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}},
  };
}

Attributes fused_attributes(const Case &c, const std::string &activation, int64_t band_rows) {
  Attributes attrs = c.conv;
  if (!activation.empty()) attrs.set("activation", activation);
  if (activation == "clip") {
    attrs.set("activation_min", -0.2);
    attrs.set("activation_max", 0.5);
  }
  for (const auto &[key, value] : c.pool.items()) attrs.set("pool_" + key, value);
  if (band_rows > 0) attrs.set("band_rows", band_rows);
  return attrs;
}

Tensor unfused(const Case &c, const std::vector<Tensor> &conv_inputs,
               const std::string &activation) {
  Attributes conv = c.conv;
  if (!activation.empty()) conv.set("activation", activation);
  if (activation == "clip") {
    conv.set("activation_min", -0.2);
    conv.set("activation_max", 0.5);
  }
  const Tensor t = call_op("fused_conv", conv_inputs, conv, "reference").at(0);
  return call_op("max_pool2d", {t}, c.pool, "reference").at(0);
}

TEST(FusedConvMaxPoolOp, MatchesUnfusedOnEveryBackend) {
  for (const Case &c : cases()) {
    const Tensor x = random_tensor(c.x, 1);
    const Tensor w = random_tensor(c.w, 2);
    const Tensor b = random_tensor({c.w[0]}, 3);
    for (const std::string activation : {"", "relu", "clip"})
      for (bool with_bias : {true, false}) {
        const std::vector<Tensor> inputs =
            with_bias ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w};
        const Tensor want = unfused(c, inputs, activation);
        for (int64_t band_rows : {0, 1, 2, 3}) {
          SCOPED_TRACE(c.label + ", activation '" + activation + "', bias " +
                       std::to_string(with_bias) + ", band_rows " + std::to_string(band_rows));
          for (const char *backend : {"reference", "cpu"}) {
            const auto got = call_op("fused_conv_max_pool", inputs,
                                     fused_attributes(c, activation, band_rows), backend);
            ASSERT_EQ(got.size(), 1u);
            EXPECT_TRUE(all_close(got[0], want, 1e-4, 1e-4)) << "backend " << backend;
          }
        }
      }
  }
}

TEST(FusedConvMaxPoolOp, Float64OnTheReferenceBackend) {
  const Case c = cases()[1];
  const Tensor x = random_tensor(c.x, 4, -1, 1, DType::Float64);
  const Tensor w = random_tensor(c.w, 5, -1, 1, DType::Float64);
  const auto got =
      call_op("fused_conv_max_pool", {x, w}, fused_attributes(c, "relu", 0), "reference");
  EXPECT_TRUE(all_close(got.at(0), unfused(c, {x, w}, "relu"), 1e-10, 1e-10));
}

// A NaN in the input reaches every pooled output whose conv outputs read it.
TEST(FusedConvMaxPoolOp, NaNPropagatesThroughThePool) {
  const Case c = cases()[0];
  Tensor x = random_tensor(c.x, 6);
  x.data<float>()[5 * c.x[3] + 7] = std::numeric_limits<float>::quiet_NaN();
  const Tensor w = random_tensor(c.w, 7);
  const Tensor want = unfused(c, {x, w}, "");
  for (int64_t band_rows : {0, 1}) {
    const Tensor got =
        call_op("fused_conv_max_pool", {x, w}, fused_attributes(c, "", band_rows), "cpu").at(0);
    int64_t nans = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_EQ(std::isnan(got.data<float>()[i]), std::isnan(want.data<float>()[i])) << i;
      nans += std::isnan(want.data<float>()[i]);
    }
    EXPECT_GT(nans, 0);
    EXPECT_TRUE(all_close(got, want, 1e-4, 1e-4));  // NaN matches NaN
  }
}

TEST(FusedConvMaxPoolOp, BadAttributesAreNamed) {
  const Case c = cases()[0];
  const Tensor x = random_tensor(c.x, 8), w = random_tensor(c.w, 9);
  Attributes zero_rows = fused_attributes(c, "", 0);
  zero_rows.set("band_rows", int64_t{0});
  expect_error(
      [&] {
        call_op("fused_conv_max_pool", {x, w}, zero_rows);
      },
      "band_rows must be at least 1");
  Attributes no_kernel = c.conv;
  expect_error(
      [&] {
        call_op("fused_conv_max_pool", {x, w}, no_kernel);
      },
      "kernel_shape' is required");
  Attributes sigmoid = fused_attributes(c, "sigmoid", 0);
  expect_error(
      [&] {
        call_op("fused_conv_max_pool", {x, w}, sigmoid, "cpu");
      },
      "activation must be none, relu or clip");
}

}  // namespace
}  // namespace lumen
