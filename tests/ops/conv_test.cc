// conv2d: hand-computed values, CPU vs reference over strides, pads, dilations, groups and
// zero-size dims, and errors. Tolerances for CPU (im2col + BLAS in float32, another summation
// order) vs reference (double accumulation): rtol 1e-4, atol 1e-4; float64 rtol/atol 1e-10.
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::cpu_matches_reference;
using testing::random_tensor;

constexpr double kRtol = 1e-4, kAtol = 1e-4;

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

Tensor iota(const Shape &shape) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i + 1);
  return t;
}

void expect_both(const std::vector<Tensor> &inputs, const Attributes &attrs,
                 const Tensor &expected) {
  for (const char *backend : {"reference", "cpu"}) {
    const auto out = call_op("conv2d", inputs, attrs, backend);
    EXPECT_TRUE(all_close(out[0], expected, 1e-6, 1e-6)) << "backend " << backend;
  }
}

TEST(Conv2dOp, HandComputed3x3) {
  // x[r][c] = 4r + c + 1 on a 4x4 grid. The kernel taps (0, 1) with 1 and (2, 2) with 2, so
  // y[i][j] = x[i][j+1] + 2 x[i+2][j+2] + bias: cross-correlation, not a flipped convolution.
  const Tensor x = iota({1, 1, 4, 4});
  const Tensor w = f32({1, 1, 3, 3}, {0, 1, 0, 0, 0, 0, 0, 0, 2});
  expect_both({x, w, f32({1}, {0.5f})}, {}, f32({1, 1, 2, 2}, {24.5f, 27.5f, 36.5f, 39.5f}));
  expect_both({x, w}, {}, f32({1, 1, 2, 2}, {24, 27, 36, 39}));
}

TEST(Conv2dOp, HandComputedPaddingAndStride) {
  // 3x3 input 1..9, 2x2 ones kernel, padding only at the top and left, stride 2.
  const Tensor x = iota({1, 1, 3, 3});
  const Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_both({x, w},
              {{"pads", std::vector<int64_t>{1, 1, 0, 0}}, {"strides", std::vector<int64_t>{2, 2}}},
              f32({1, 1, 2, 2}, {1, 5, 11, 28}));
}

TEST(Conv2dOp, HandComputedDilation) {
  // 5x5 input 1..25, a 2x2 kernel dilated by 2 reads x[i][j], x[i][j+2], x[i+2][j], x[i+2][j+2].
  const Tensor x = iota({1, 1, 5, 5});
  const Tensor w = f32({1, 1, 2, 2}, {1, 10, 100, 1000});
  // (0, 0): 1 + 10*3 + 100*11 + 1000*13 = 14131; each step right adds 1111, down 5555.
  expect_both({x, w}, {{"dilations", std::vector<int64_t>{2, 2}}},
              f32({1, 1, 3, 3}, {14131, 15242, 16353, 19686, 20797, 21908, 25241, 26352, 27463}));
}

TEST(Conv2dOp, HandComputedGroups) {
  // Two groups of one channel: each output channel scales its own input channel.
  expect_both({f32({1, 2, 1, 1}, {3, 5}), f32({2, 1, 1, 1}, {2, 10}), f32({2}, {1, -1})},
              {{"group", int64_t{2}}}, f32({1, 2, 1, 1}, {7, 49}));
  // One group with two input channels: the outputs sum over both.
  expect_both({f32({1, 2, 1, 1}, {3, 5}), f32({2, 2, 1, 1}, {2, 10, 1, -1})}, {},
              f32({1, 2, 1, 1}, {56, -2}));
}

TEST(Conv2dOp, OutputShapes) {
  auto shape_of = [](const Shape &x, const Shape &w, const Attributes &attrs) {
    return call_op("conv2d", {Tensor::zeros(x), Tensor::zeros(w)}, attrs, "reference")[0].shape();
  };
  EXPECT_EQ(shape_of({2, 3, 224, 224}, {64, 3, 7, 7},
                     {{"strides", std::vector<int64_t>{2, 2}},
                      {"pads", std::vector<int64_t>{3, 3, 3, 3}}}),
            (Shape{2, 64, 112, 112}));
  EXPECT_EQ(shape_of({1, 4, 10, 9}, {8, 2, 3, 2},
                     {{"group", int64_t{2}},
                      {"pads", std::vector<int64_t>{0, 1, 2, 0}},
                      {"dilations", std::vector<int64_t>{2, 1}}}),
            (Shape{1, 8, 8, 9}));
  EXPECT_EQ(shape_of({0, 3, 5, 5}, {4, 3, 3, 3}, {}), (Shape{0, 4, 3, 3}));
}

TEST(Conv2dOp, InfersUnknownDims) {
  const TensorType x{DType::Float32, Shape{kUnknownDim, 3, kUnknownDim, 32}};
  const TensorType w{DType::Float32, Shape{8, 3, 3, 3}};
  const Attributes attrs{{"strides", std::vector<int64_t>{2, 2}}};
  InferContext ctx{.inputs = {&x, &w}, .attrs = attrs, .op = "conv2d", .node = "c1"};
  EXPECT_EQ(infer_types(get_op("conv2d"), ctx)[0].shape, (Shape{kUnknownDim, 8, kUnknownDim, 15}));
}

struct ConvCase {
  Shape x, w;
  Attributes attrs;
  bool bias;
};

TEST(Conv2dOp, CpuMatchesReference) {
  using V = std::vector<int64_t>;
  const std::vector<ConvCase> cases = {
      {{2, 3, 8, 8}, {4, 3, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true},
      {{2, 3, 8, 8}, {4, 3, 3, 3}, {}, false},
      {{1, 3, 9, 9}, {5, 3, 3, 3}, {{"strides", V{2, 2}}}, true},
      {{1, 3, 10, 9}, {5, 3, 3, 3}, {{"strides", V{2, 3}}, {"pads", V{1, 0, 1, 2}}}, true},
      {{1, 2, 10, 10}, {3, 2, 3, 3}, {{"dilations", V{2, 2}}}, true},
      {{1, 2, 11, 10}, {3, 2, 3, 2}, {{"dilations", V{2, 3}}, {"pads", V{2, 0, 1, 3}}}, false},
      {{1, 2, 7, 6}, {3, 2, 3, 2}, {{"pads", V{1, 0, 2, 1}}, {"strides", V{2, 1}}}, true},
      {{2, 4, 6, 6}, {6, 2, 3, 3}, {{"group", int64_t{2}}}, true},
      {{2, 6, 7, 7}, {9, 2, 3, 3}, {{"group", int64_t{3}}, {"pads", V{1, 1, 1, 1}}}, false},
      {{2, 4, 6, 6}, {4, 1, 3, 3}, {{"group", int64_t{4}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{1, 3, 9, 8}, {6, 1, 3, 3}, {{"group", int64_t{3}}, {"strides", V{2, 2}}}, false},
      {{1, 4, 9, 9},
       {4, 1, 3, 3},
       {{"group", int64_t{4}},
        {"dilations", V{2, 2}},
        {"pads", V{2, 1, 0, 3}},
        {"strides", V{1, 2}}},
       true},
      {{2, 8, 5, 5}, {16, 8, 1, 1}, {}, true},
      {{2, 8, 5, 5}, {16, 8, 1, 1}, {}, false},
      // Stride 1 on maps at least 20 wide: the cpu conv runs on a zero-padded grid
      // (padded_image.h); same, dilated and asymmetric padding, groups, two images.
      {{1, 5, 23, 24}, {7, 5, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true},
      {{2, 4, 30, 41}, {6, 4, 3, 2}, {{"dilations", V{2, 1}}, {"pads", V{2, 0, 1, 3}}}, false},
      {{1, 6, 21, 33}, {4, 3, 5, 5}, {{"group", int64_t{2}}, {"pads", V{2, 2, 2, 2}}}, true},
      {{1, 3, 22, 40}, {5, 3, 3, 3}, {}, true},
      // One output row (a 1-D conv as 2-D, wav2vec2's grouped positional conv): the grid's
      // columns are exactly the outputs.
      {{2, 16, 1, 50}, {16, 4, 1, 17}, {{"group", int64_t{4}}, {"pads", V{0, 8, 0, 8}}}, true},
      // Stride 2 with output rows wider than 16. Shallow (depth <= 160, first layers) runs on
      // row/column parity planes of a padded copy: left/right padding, a 7x7 first layer, an
      // even kernel, two images. Deeper packs im2col 16 lanes at a time from 32 inputs, unless
      // the grid costs no extra lanes (the 7x7 output); a 1x1 downsample.
      {{1, 3, 45, 47}, {5, 3, 7, 7}, {{"strides", V{2, 2}}, {"pads", V{3, 3, 3, 3}}}, true},
      {{1, 4, 41, 70}, {6, 4, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 2, 1, 1}}}, false},
      {{2, 3, 39, 40}, {4, 3, 2, 2}, {{"strides", V{2, 2}}, {"pads", V{0, 1, 1, 0}}}, true},
      {{1, 20, 37, 39}, {6, 20, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{1, 32, 14, 14}, {20, 32, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{1, 8, 36, 38}, {4, 8, 1, 1}, {{"strides", V{2, 2}}}, true},
      {{1, 8, 6, 6}, {4, 8, 1, 1}, {{"strides", V{2, 2}}}, true},
      {{1, 8, 4, 4}, {4, 8, 1, 1}, {{"pads", V{1, 1, 1, 1}}}, true},
      {{2, 6, 9, 10},
       {4, 3, 1, 1},
       {{"group", int64_t{2}}, {"strides", V{2, 3}}, {"pads", V{1, 0, 0, 2}}},
       true},  // 1x1 sampled: groups, two images, uneven strides and pads
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {}, true},
      {{1, 1, 5, 1}, {2, 1, 3, 1}, {}, true},
      {{3, 2, 1, 1}, {4, 2, 1, 1}, {}, false},
      {{0, 3, 5, 5}, {2, 3, 3, 3}, {}, true},
      {{1, 0, 4, 4}, {2, 0, 3, 3}, {}, true},
      {{1, 0, 4, 4}, {2, 0, 3, 3}, {}, false},
      {{1, 3, 4, 4}, {0, 3, 3, 3}, {}, false},
      {{1, 3, 3, 3}, {2, 3, 3, 3}, {}, true},                              // output 1x1
      {{4, 16, 20, 20}, {32, 16, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true},  // many items
      {{1, 32, 30, 30}, {48, 32, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true},  // one item, threaded
      {{1, 64, 24, 24}, {64, 64, 1, 1}, {}, false},                        // big 1x1
      // 8, 16 or 24 output channels per group (grouped_conv.h): 8 channels in lanes, row tails
      // of 12/8/4/2/1 outputs, strides, dilation, asymmetric pads, a 1x1 grouped conv.
      {{1, 24, 30, 30}, {24, 8, 3, 3}, {{"group", int64_t{3}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{2, 16, 29, 31},
       {16, 8, 3, 3},
       {{"group", int64_t{2}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}},
       true},
      {{1, 8, 13, 17},
       {32, 4, 3, 3},
       {{"group", int64_t{2}},
        {"dilations", V{2, 2}},
        {"pads", V{2, 1, 0, 3}},
        {"strides", V{1, 2}}},
       false},
      {{1, 24, 7, 7}, {48, 12, 5, 5}, {{"group", int64_t{2}}, {"pads", V{2, 2, 2, 2}}}, true},
      {{1, 16, 9, 9}, {16, 8, 1, 1}, {{"group", int64_t{2}}}, true},
      // 1x1 on 1x1 maps (squeeze-and-excitation) as matrix-vector products: groups, two images.
      {{2, 40, 1, 1}, {24, 20, 1, 1}, {{"group", int64_t{2}}}, true},
      {{1, 577, 1, 1}, {144, 577, 1, 1}, {}, true},
      // Shallow ungrouped convs (an RGB first layer, depth <= 32) take the grouped convs' kernel.
      {{1, 3, 29, 31}, {16, 3, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{2, 2, 20, 21}, {8, 2, 3, 5}, {{"pads", V{0, 2, 1, 1}}, {"dilations", V{1, 2}}}, false},
  };
  uint64_t seed = 1;
  for (const ConvCase &c : cases) {
    SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string() + " " + c.attrs.to_string() +
                 (c.bias ? " bias" : ""));
    std::vector<Tensor> inputs = {random_tensor(c.x, seed), random_tensor(c.w, seed + 1)};
    if (c.bias) inputs.push_back(random_tensor({c.w[0]}, seed + 2));
    EXPECT_TRUE(cpu_matches_reference("conv2d", inputs, c.attrs, kRtol, kAtol));
    seed += 3;
  }
}

// The grouped convs in lanes with fused_conv's epilogue: an activation, a clamp, a residual.
TEST(Conv2dOp, GroupedFusedEpilogueMatchesReference) {
  using V = std::vector<int64_t>;
  const Tensor x = random_tensor({2, 32, 15, 14}, 40, -2, 2);
  const Tensor w = random_tensor({32, 8, 3, 3}, 41);
  const Tensor b = random_tensor({32}, 42);
  Attributes attrs{{"group", int64_t{4}}, {"pads", V{1, 1, 1, 1}}, {"strides", V{1, 1}}};
  attrs.set("activation", std::string("silu"));
  EXPECT_TRUE(cpu_matches_reference("fused_conv", {x, w, b}, attrs, kRtol, kAtol));
  attrs.set("activation", std::string("clip"));  // relu6, clamped in the kernel
  attrs.set("activation_min", 0.0);
  attrs.set("activation_max", 6.0);
  EXPECT_TRUE(cpu_matches_reference("fused_conv", {x, w, b}, attrs, kRtol, kAtol));
  const Tensor z = random_tensor({2, 32, 15, 14}, 43);
  attrs = Attributes{{"group", int64_t{4}}, {"pads", V{1, 1, 1, 1}}, {"strides", V{1, 1}}};
  attrs.set("activation", std::string("relu"));
  EXPECT_TRUE(cpu_matches_reference("fused_conv", {x, w, b, z}, attrs, kRtol, kAtol));
  // A squeeze-and-excitation layer (1x1 on a 1x1 map, a matrix-vector product) with an
  // activation and a residual, two images.
  const Tensor sx = random_tensor({2, 50, 1, 1}, 44), sw = random_tensor({36, 50, 1, 1}, 45);
  const Tensor sb = random_tensor({36}, 46), sz = random_tensor({2, 36, 1, 1}, 47);
  Attributes se{{"activation", std::string("sigmoid")}};
  EXPECT_TRUE(cpu_matches_reference("fused_conv", {sx, sw, sb, sz}, se, kRtol, kAtol));
}

TEST(Conv2dOp, ZeroInputChannelsGiveBias) {
  for (const char *backend : {"reference", "cpu"}) {
    const auto out = call_op(
        "conv2d", {Tensor::zeros({1, 0, 3, 3}), Tensor::zeros({2, 0, 2, 2}), f32({2}, {1.5f, -2})},
        {}, backend);
    EXPECT_TRUE(all_close(out[0], f32({1, 2, 2, 2}, {1.5f, 1.5f, 1.5f, 1.5f, -2, -2, -2, -2})))
        << backend;
  }
}

TEST(Conv2dOp, Errors) {
  using V = std::vector<int64_t>;
  struct Bad {
    Shape x, w;
    Attributes attrs;
    Shape bias;  // rank 0: no bias
    const char *expect;
  };
  const std::vector<Bad> cases = {
      {{1, 3, 4, 4}, {4, 1, 3, 3}, {{"group", int64_t{2}}}, {}, "not divisible by group"},
      {{1, 4, 4, 4}, {3, 2, 3, 3}, {{"group", int64_t{2}}}, {}, "not divisible by group"},
      {{1, 4, 4, 4}, {4, 3, 3, 3}, {}, {}, "input channels per group"},
      {{1, 1, 2, 2}, {1, 1, 3, 3}, {}, {}, "larger than the padded input"},
      {{1, 1, 5, 5}, {1, 1, 3, 3}, {{"dilations", V{3, 1}}}, {}, "larger than the padded input"},
      {{1, 4, 4}, {1, 1, 3, 3}, {}, {}, "4-D"},
      {{1, 1, 4, 4}, {1, 3, 3}, {}, {}, "4-D"},
      {{1, 1, 4, 4}, {2, 1, 3, 3}, {}, {3}, "bias"},
      {{1, 1, 4, 4}, {1, 1, 3, 3}, {{"strides", V{0, 1}}}, {}, "strides"},
      {{1, 1, 4, 4}, {1, 1, 3, 3}, {{"pads", V{1, 1}}}, {}, "pads"},
      {{1, 1, 4, 4}, {1, 1, 3, 3}, {{"group", int64_t{0}}}, {}, "group"},
  };
  for (const Bad &c : cases) {
    std::vector<Tensor> inputs = {Tensor::zeros(c.x), Tensor::zeros(c.w)};
    if (c.bias.rank()) inputs.push_back(Tensor::zeros(c.bias));
    EXPECT_THROW(call_op("conv2d", inputs, c.attrs), Error);
    const std::string msg = error_of([&] { call_op("conv2d", inputs, c.attrs); });
    EXPECT_NE(msg.find("conv2d"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace lumen
