// Depthwise convolution (one input channel per group) on the cpu backend against the reference:
// channels in vector lanes (AVX2: any kernel, stride and dilation on outputs under 16 wide, 5x5 and
// up strided, 7x7 and up; AVX-512 3x3), and plane by plane: the unrolled 3x3 stride-1 and stride-2
// paths, the flat taps over phase planes (other sizes, strides, dilations), the row-by-row path
// (mixed strides), channel multipliers; asymmetric padding, partial channel blocks, several row
// strips, and the fused epilogue (clip as MobileNet's relu6, plus a residual). The cpu kernel sums
// the taps in float32 in another order than the reference (double): rtol/atol 1e-5.
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::cpu_matches_reference;
using testing::random_tensor;
using Ints = std::vector<int64_t>;

constexpr double kTol = 1e-5;

struct DwCase {
  std::string label;
  int64_t n, c, h, w, mult, kh, kw;
  Ints strides, pads, dilations;
};

std::vector<DwCase> cases() {
  return {
      {"3x3 s1 p1", 1, 8, 14, 14, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s1 p1 wide odd", 2, 3, 9, 37, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s2 p1 even", 1, 5, 16, 16, 1, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s2 p1 odd", 1, 4, 15, 33, 1, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s2 no pad", 1, 3, 11, 10, 1, 3, 3, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {"3x3 s1 asymmetric pads", 1, 3, 7, 8, 1, 3, 3, {1, 1}, {0, 2, 1, 0}, {1, 1}},
      {"3x3 s1 tiny plane", 1, 6, 1, 1, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 multiplier 2", 2, 3, 8, 9, 2, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s2 multiplier 3", 1, 2, 9, 9, 3, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 dilation 2", 1, 4, 12, 13, 1, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}},
      {"3x3 mixed strides", 1, 3, 10, 12, 1, 3, 3, {1, 2}, {1, 1, 1, 1}, {1, 1}},
      {"5x5 s2 p2", 1, 4, 17, 19, 1, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {"3x3 s3", 1, 3, 13, 14, 1, 3, 3, {3, 3}, {1, 1, 1, 1}, {1, 1}},
      {"1x7 dilated", 1, 2, 6, 20, 1, 1, 7, {1, 1}, {0, 3, 0, 3}, {1, 2}},
      {"mobilenet-like 112", 1, 4, 112, 112, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      // 16 channels per vector: full and partial channel blocks, several row strips.
      {"3x3 s2 p1 18 channels 64x64", 1, 18, 64, 64, 1, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s1 p1 40 channels 7x7", 2, 40, 7, 7, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s2 p1 33 channels 14x14", 1, 33, 14, 14, 1, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s2 17 channels 13x14 pads", 1, 17, 13, 14, 1, 3, 3, {2, 2}, {0, 1, 2, 0}, {1, 1}},
      {"3x3 s1 16 channels 12x12 no pad", 1, 16, 12, 12, 1, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // Stride 2 plane by plane (over 27 output columns with AVX2): the vectorized parity split
      // with the first padded column even or odd, odd widths and row tails.
      {"3x3 s2 no pad 61 wide", 1, 3, 9, 61, 1, 3, 3, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {"3x3 s2 pads 2/1 58 wide", 1, 2, 8, 58, 1, 3, 3, {2, 2}, {1, 2, 0, 1}, {1, 1}},
      // The AVX2 width limit: 27 output columns in lanes, 28 plane by plane.
      {"3x3 s1 p1 12 channels 27x27", 1, 12, 27, 27, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"3x3 s1 p1 12 channels 28x28", 1, 12, 28, 28, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      // Any other kernel (flat taps over phase planes): MobileNetV3/EfficientNet 5x5, ConvNeXt
      // 7x7, stride 3 and 4, dilation, multipliers, narrow and wide rows.
      {"5x5 s1 p2 14x14", 1, 6, 14, 14, 1, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}},
      {"5x5 s2 p2 multiplier 2", 2, 3, 23, 21, 2, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {"5x5 s1 dilation 2 wide", 1, 2, 9, 80, 1, 5, 5, {1, 1}, {4, 4, 4, 4}, {2, 2}},
      {"7x7 s1 p3 56x56", 1, 4, 56, 56, 1, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}},
      {"7x7 s2 asymmetric pads", 1, 3, 20, 19, 1, 7, 7, {2, 2}, {3, 2, 1, 3}, {1, 1}},
      {"3x5 s3 dilated", 1, 3, 25, 26, 1, 3, 5, {3, 3}, {1, 2, 0, 1}, {2, 1}},
      {"4x4 s4 no pad", 1, 5, 16, 20, 1, 4, 4, {4, 4}, {0, 0, 0, 0}, {1, 1}},
      {"3x3 s2 dilation 2", 1, 3, 15, 17, 1, 3, 3, {2, 2}, {2, 2, 2, 2}, {2, 2}},
      // In lanes at any width: strided 5x5 (MNASNet 56x56 -> 28x28) and 7x7 over several row
      // strips, 13 channels (one full and one partial block), 9x11 kernel.
      {"5x5 s2 p2 13 channels 56x56", 1, 13, 56, 56, 1, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {"7x7 s1 p3 13 channels 40x43", 1, 13, 40, 43, 1, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}},
      {"9x11 s2 pads 4/5 11 channels", 2, 11, 21, 30, 1, 9, 11, {2, 2}, {4, 5, 3, 2}, {1, 1}},
  };
}

Attributes attrs_of(const DwCase &c) {
  return {{"group", c.c}, {"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}};
}

TEST(DepthwiseConv, MatchesReference) {
  for (const DwCase &c : cases()) {
    SCOPED_TRACE(c.label);
    const Tensor x = random_tensor({c.n, c.c, c.h, c.w}, 1);
    const Tensor w = random_tensor({c.c * c.mult, 1, c.kh, c.kw}, 2);
    const Tensor b = random_tensor({c.c * c.mult}, 3);
    EXPECT_TRUE(cpu_matches_reference("conv2d", {x, w}, attrs_of(c), kTol, kTol));
    EXPECT_TRUE(cpu_matches_reference("conv2d", {x, w, b}, attrs_of(c), kTol, kTol));
  }
}

TEST(DepthwiseConv, FusedEpilogueMatchesReference) {
  for (const DwCase &c : cases()) {
    SCOPED_TRACE(c.label);
    const Tensor x = random_tensor({c.n, c.c, c.h, c.w}, 4, -3, 3);
    const Tensor w = random_tensor({c.c * c.mult, 1, c.kh, c.kw}, 5);
    const Tensor b = random_tensor({c.c * c.mult}, 6);
    Attributes relu6 = attrs_of(c);
    relu6.set("activation", std::string("clip"));
    relu6.set("activation_min", 0.0);
    relu6.set("activation_max", 6.0);
    EXPECT_TRUE(cpu_matches_reference("fused_conv", {x, w, b}, relu6, kTol, kTol));
    // A residual with the output's shape (the reference computes the shape).
    const Tensor y = call_op("conv2d", {x, w, b}, attrs_of(c), "reference")[0];
    const Tensor z = random_tensor(y.shape(), 7);
    EXPECT_TRUE(cpu_matches_reference("fused_conv", {x, w, b, z}, relu6, kTol, kTol));
  }
}

}  // namespace
}  // namespace lumen
