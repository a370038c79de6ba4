// N-d convolution and pooling on the reference kernels: hand-computed 1-D, 2-D and 3-D cases
// for conv_nd, conv_transpose, max_pool_nd (with indices), avg_pool_nd, lp_pool and max_unpool,
// and errors naming the op.
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
}

std::vector<Tensor> run(const std::string &op, const std::vector<Tensor> &inputs,
                        const Attributes &attrs = {}) {
  return call_op(op, inputs, attrs, "reference");
}

void expect_values(const Tensor &t, const Shape &shape, const std::vector<float> &want) {
  ASSERT_EQ(t.shape(), shape);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], 1e-5) << i;
}

using V = std::vector<int64_t>;

TEST(ConvNdTest, Conv1d) {
  const Tensor x = f32({1, 1, 4}, {1, 2, 3, 4}), w = f32({1, 1, 2}, {1, 1});
  expect_values(run("conv_nd", {x, w})[0], {1, 1, 3}, {3, 5, 7});
  expect_values(run("conv_nd", {x, w, f32({1}, {10})}, {{"pads", V{1, 1}}, {"strides", V{2}}})[0],
                {1, 1, 3}, {11, 15, 14});
  // Dilation 2: x[i] + x[i + 2].
  expect_values(run("conv_nd", {x, w}, {{"dilations", V{2}}})[0], {1, 1, 2}, {4, 6});
}

TEST(ConvNdTest, Conv3dGroups) {
  // Two groups of one channel, 1x1x1 kernels: channel c scaled by w[c].
  const Tensor x = f32({1, 2, 1, 1, 2}, {1, 2, 3, 4}), w = f32({2, 1, 1, 1, 1}, {2, -1});
  expect_values(run("conv_nd", {x, w}, {{"group", int64_t{2}}})[0], {1, 2, 1, 1, 2},
                {2, 4, -3, -4});
}

TEST(ConvNdTest, ConvTranspose) {
  const Tensor x = f32({1, 1, 2}, {1, 2}), w = f32({1, 1, 2}, {1, 1});
  expect_values(run("conv_transpose", {x, w})[0], {1, 1, 3}, {1, 3, 2});
  expect_values(run("conv_transpose", {x, w}, {{"strides", V{2}}})[0], {1, 1, 4}, {1, 1, 2, 2});
  // output_padding adds a zero (bias-only) position at the end; pads crop.
  expect_values(run("conv_transpose", {x, w, f32({1}, {5})},
                    {{"strides", V{2}}, {"output_padding", V{1}}})[0],
                {1, 1, 5}, {6, 6, 7, 7, 5});
  expect_values(run("conv_transpose", {x, w}, {{"strides", V{2}}, {"pads", V{1, 1}}})[0], {1, 1, 2},
                {1, 2});
  expect_values(run("conv_transpose", {x, w}, {{"output_shape", V{5}}, {"strides", V{2}}})[0],
                {1, 1, 5}, {1, 1, 2, 2, 0});
}

// The CPU's conv_transpose (GEMM + col2im) against the reference, 1-D, 2-D and 3-D: strides, pads
// (crop), dilations, output_padding, groups, a batch, with and without bias, and weights that are
// constants (packed at compile time) or inputs.
TEST(ConvNdTest, ConvTransposeCpuMatchesReference) {
  struct Case {
    const char *label;
    Shape x, w;
    Attributes attrs;
  };
  const std::vector<Case> cases = {
      {"3x3 s1", {1, 4, 5, 6}, {4, 3, 3, 3}, {}},
      {"4x4 s2 p1 (a decoder's upsampling)",
       {2, 8, 7, 7},
       {8, 6, 4, 4},
       {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}},
      {"3x3 s2 output_padding",
       {1, 3, 4, 5},
       {3, 2, 3, 3},
       {{"strides", V{2, 2}}, {"output_padding", V{1, 1}}}},
      {"dilated, asymmetric pads",
       {1, 2, 6, 5},
       {2, 3, 3, 2},
       {{"dilations", V{2, 1}}, {"pads", V{0, 1, 2, 0}}, {"strides", V{1, 3}}}},
      {"groups", {2, 6, 4, 4}, {6, 2, 3, 3}, {{"group", int64_t{3}}, {"strides", V{2, 1}}}},
      {"1x1 s2", {1, 16, 9, 9}, {16, 20, 1, 1}, {{"strides", V{2, 2}}}},
      {"1-D k4 s2 p1 (an audio decoder's upsampling)",
       {2, 6, 11},
       {6, 4, 4},
       {{"strides", V{2}}, {"pads", V{1, 1}}}},
      {"1-D dilated, groups, output_padding",
       {1, 4, 7},
       {4, 3, 3},
       {{"dilations", V{2}}, {"group", int64_t{2}}, {"strides", V{3}}, {"output_padding", V{2}}}},
      {"3-D 2x2x2 s2 (a 3-D U-Net's upsampling)",
       {1, 4, 3, 4, 5},
       {4, 3, 2, 2, 2},
       {{"strides", V{2, 2, 2}}}},
      {"3-D 3x3x3 s(1,2,2) asymmetric pads",
       {2, 3, 4, 3, 3},
       {3, 2, 3, 3, 3},
       {{"strides", V{1, 2, 2}}, {"pads", V{1, 0, 1, 0, 2, 1}}}},
  };
  for (const Case &c : cases) {
    const Tensor x = testing::random_tensor(c.x, 1), w = testing::random_tensor(c.w, 2);
    const Tensor b = testing::random_tensor({c.w[1] * c.attrs.get_int("group", 1)}, 3);
    EXPECT_TRUE(testing::cpu_matches_reference("conv_transpose", {x, w}, c.attrs)) << c.label;
    EXPECT_TRUE(testing::cpu_matches_reference("conv_transpose", {x, w, b}, c.attrs)) << c.label;
  }
}

TEST(ConvNdTest, Pools) {
  const Tensor x = f32({1, 1, 4}, {1, 3, 2, 4});
  const auto mx = run("max_pool_nd", {x}, {{"kernel_shape", V{2}}, {"strides", V{2}}});
  expect_values(mx[0], {1, 1, 2}, {3, 4});
  EXPECT_EQ(mx[1].data<int64_t>()[0], 1);
  EXPECT_EQ(mx[1].data<int64_t>()[1], 3);
  const Attributes padded{{"kernel_shape", V{2}}, {"strides", V{2}}, {"pads", V{1, 1}}};
  expect_values(run("avg_pool_nd", {x}, padded)[0], {1, 1, 3}, {1, 2.5f, 4});
  Attributes include = padded;
  include.set("count_include_pad", int64_t{1});
  expect_values(run("avg_pool_nd", {x}, include)[0], {1, 1, 3}, {0.5f, 2.5f, 2});
  expect_values(run("lp_pool", {f32({1, 1, 4}, {3, 4, 0, 0})},
                    {{"kernel_shape", V{2}}, {"strides", V{2}}, {"p", 2.0}})[0],
                {1, 1, 2}, {5, 0});
  // ceil_mode keeps a last partial window.
  expect_values(run("max_pool_nd", {f32({1, 1, 3}, {1, 2, 3})},
                    {{"kernel_shape", V{2}}, {"strides", V{2}}, {"ceil_mode", int64_t{1}}})[0],
                {1, 1, 2}, {2, 3});
}

TEST(ConvNdTest, MaxUnpool) {
  const Tensor x = f32({1, 1, 2}, {5, 6});
  const Tensor ind = Tensor::from_vector<int64_t>({1, 1, 2}, {1, 3});
  expect_values(run("max_unpool", {x, ind}, {{"kernel_shape", V{2}}, {"strides", V{2}}})[0],
                {1, 1, 4}, {0, 5, 0, 6});
  const Tensor bad = Tensor::from_vector<int64_t>({1, 1, 2}, {1, 9});
  EXPECT_THROW(run("max_unpool", {x, bad}, {{"kernel_shape", V{2}}, {"strides", V{2}}}), Error);
}

TEST(ConvNdTest, Errors) {
  const Tensor x = f32({1, 1, 2}, {1, 2});
  EXPECT_THROW(run("conv_nd", {x, f32({1, 1, 3}, {1, 1, 1})}), Error);  // window > input
  EXPECT_THROW(run("conv_nd", {x, f32({1, 2, 1}, {1, 1})}), Error);     // channel mismatch
  EXPECT_THROW(run("max_pool_nd", {x}), Error);                         // no kernel_shape
  EXPECT_THROW(run("avg_pool_nd", {x}, {{"kernel_shape", V{1}}, {"strides", V{0}}}), Error);
}

}  // namespace
}  // namespace lumen
