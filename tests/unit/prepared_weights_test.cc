// Kernels whose prepare function packs constant weights at compile time (cpu conv2d, fused_conv,
// conv_transpose, matmul, fused_matmul, gemm, fused_gemm) must give what the reference backend
// gives for the same compiled graph; the eager tests (tests/ops) only exercise the unprepared path.
#include <gtest/gtest.h>

#include <string>

#include "../ops/op_test_util.h"
#include "backends/cpu/kernels/conv_tap_windows.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "core/backend.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

using testing::all_close;

// One op on input x with constant inputs; compiled for `backend`, run on x.
Tensor run_compiled(const std::string &backend, const std::string &op, const Tensor &x,
                    const std::vector<Tensor> &constants, const Attributes &attrs) {
  Runtime rt(RuntimeOptions{.num_threads = 2, .backend = backend});
  Graph g;
  std::vector<Value *> inputs{g.add_input("x", x.shape())};
  for (size_t i = 0; i < constants.size(); ++i)
    inputs.push_back(constants[i].defined() ? g.add_constant(str("c", i), constants[i]) : nullptr);
  g.mark_output(g.add_op(op, inputs, attrs));
  return g.compile(&rt)->execute({x})[0].clone();
}

void expect_cpu_matches_reference(const std::string &op, const Tensor &x,
                                  const std::vector<Tensor> &constants, const Attributes &attrs) {
  ASSERT_NE(get_backend("cpu").find_prepare(op, DType::Float32), nullptr) << op;
  // cpu first: its output must not land in a cached buffer that already holds the answer.
  const Tensor got = run_compiled("cpu", op, x, constants, attrs);
  const Tensor want = run_compiled("reference", op, x, constants, attrs);
  EXPECT_TRUE(all_close(got, want, 1e-4, 1e-4)) << op << " " << attrs.to_string();
}

TEST(PreparedWeights, ConvMatchesReference) {
  const Tensor x = Tensor::randn({2, 8, 13, 11}, 1);
  const Attributes relu{{"activation", std::string("relu")}};
  for (int64_t group : {1, 2}) {
    const Tensor w = Tensor::randn({12, 8 / group, 3, 3}, 2);
    const Tensor b = Tensor::randn({12}, 3);
    const Attributes attrs{{"group", group},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{1, 2}}};
    expect_cpu_matches_reference("conv2d", x, {w, b}, attrs);
    Attributes fused = attrs;
    fused.set("activation", std::string("relu"));
    expect_cpu_matches_reference("fused_conv", x, {w, b}, fused);
  }
  // 1x1, stride 1: the input is the GEMM's B as it lies.
  expect_cpu_matches_reference("conv2d", x, {Tensor::randn({40, 8, 1, 1}, 4)}, {});
}

// Convs whose taps mostly read padding run one GEMM per output window with that window's taps
// (conv_tap_windows.h): ASPP's dilation 12 on 14x14 (bias, then relu and a residual), groups with
// stride 2 and asymmetric pads, and pads so wide that the outer outputs read no input at all.
TEST(PreparedWeights, TapWindowConvMatchesReference) {
  using V = std::vector<int64_t>;
  struct Case {
    Shape x, w;
    Attributes attrs;
  };
  const std::vector<Case> cases = {
      {{2, 8, 14, 14}, {12, 8, 3, 3}, {{"pads", V{12, 12, 12, 12}}, {"dilations", V{12, 12}}}},
      {{1, 6, 9, 11},
       {8, 3, 3, 3},
       {{"group", int64_t{2}},
        {"pads", V{6, 4, 5, 6}},
        {"dilations", V{6, 5}},
        {"strides", V{2, 1}}}},
      {{1, 3, 4, 4}, {5, 3, 3, 3}, {{"pads", V{9, 9, 9, 9}}}},
  };
  uint64_t seed = 40;
  for (const Case &c : cases) {
    const Tensor x = Tensor::randn(c.x, seed++);
    const Tensor w = Tensor::randn(c.w, seed++);
    const Tensor b = Tensor::randn({c.w[0]}, seed++);
    // The path under test must be the one taken.
    Graph shapes;
    const Shape y =
        shapes.add_op("conv2d", {shapes.add_input("x", c.x), shapes.add_constant("w", w)}, c.attrs)
            ->shape();
    const auto pads = c.attrs.get_ints("pads", V{0, 0, 0, 0});
    const auto dilations = c.attrs.get_ints("dilations", V{1, 1});
    const auto strides = c.attrs.get_ints("strides", V{1, 1});
    const int64_t group = c.attrs.get_int("group", 1);
    const ConvParams p{c.x[0],     c.x[1],     c.x[2],  c.x[3],  c.w[0],       c.w[1],
                       c.w[2],     c.w[3],     y[2],    y[3],    group,        c.w[0] / group,
                       strides[0], strides[1], pads[0], pads[1], dilations[0], dilations[1]};
    EXPECT_FALSE(cpu::tap_windows(p).empty()) << c.attrs.to_string();
    expect_cpu_matches_reference("conv2d", x, {w, b}, c.attrs);
    Attributes fused = c.attrs;
    fused.set("activation", std::string("relu"));
    expect_cpu_matches_reference("fused_conv", x, {w, b, Tensor::randn(y, seed++)}, fused);
  }
}

// conv_transpose packs W_g^T per group: a decoder's 4x4 stride-2 upsampling, with groups.
TEST(PreparedWeights, ConvTransposeMatchesReference) {
  const Tensor x = Tensor::randn({2, 8, 7, 6}, 21);
  for (int64_t group : {1, 2}) {
    const Tensor w = Tensor::randn({8, 10 / group, 4, 4}, 22);
    const Tensor b = Tensor::randn({10}, 23);
    expect_cpu_matches_reference("conv_transpose", x, {w, b},
                                 {{"group", group},
                                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                  {"strides", std::vector<int64_t>{2, 2}}});
  }
}

// 3x3 stride-1 convs with enough channels on maps of 6x6 and more run Winograd F(2x2, 3x3)
// (winograd_conv.h): odd output sizes (partial tiles), padding, bias, residual and activation;
// large maps in bands of tile rows (the last one partial); the smallest maps and channel counts
// that qualify.
TEST(PreparedWeights, WinogradConvMatchesReference) {
  const Tensor w = Tensor::randn({100, 96, 3, 3}, 12);
  const Tensor b = Tensor::randn({100}, 13);
  const Attributes pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  expect_cpu_matches_reference("conv2d", Tensor::randn({2, 96, 15, 17}, 14), {w, b}, pad1);
  expect_cpu_matches_reference("conv2d", Tensor::randn({1, 96, 16, 16}, 15), {w}, {});
  Attributes fused = pad1;
  fused.set("activation", std::string("relu"));
  expect_cpu_matches_reference("fused_conv", Tensor::randn({1, 96, 14, 20}, 16),
                               {w, b, Tensor::randn({1, 100, 14, 20}, 17)}, fused);
  const Tensor w64 = Tensor::randn({64, 64, 3, 3}, 18);
  const Tensor b64 = Tensor::randn({64}, 19);
  expect_cpu_matches_reference("fused_conv", Tensor::randn({1, 64, 57, 58}, 20),
                               {w64, b64, Tensor::randn({1, 64, 57, 58}, 21)}, fused);
  expect_cpu_matches_reference("conv2d", Tensor::randn({2, 64, 58, 61}, 22), {w64}, {});
  expect_cpu_matches_reference("fused_conv", Tensor::randn({1, 64, 7, 7}, 23),
                               {w64, b64, Tensor::randn({1, 64, 7, 7}, 24)}, fused);
  expect_cpu_matches_reference("conv2d", Tensor::randn({1, 48, 8, 8}, 25),
                               {Tensor::randn({96, 48, 3, 3}, 26)}, {});
  expect_cpu_matches_reference("conv2d", Tensor::randn({1, 32, 27, 27}, 27),
                               {Tensor::randn({128, 32, 3, 3}, 28)}, pad1);
  expect_cpu_matches_reference("fused_conv", Tensor::randn({1, 128, 27, 28}, 29),
                               {Tensor::randn({32, 128, 3, 3}, 30), Tensor::randn({32}, 31)},
                               fused);
}

// The shapes above are on the Winograd side of the rule; those below, just off it.
TEST(PreparedWeights, WinogradRuleBoundaries) {
  const auto conv = [](int64_t c, int64_t m, int64_t oh, int64_t ow) {
    ConvParams p{};
    p.n = 1, p.c = c, p.cg = c, p.m = m, p.mg = m, p.group = 1;
    p.kh = p.kw = 3, p.sh = p.sw = 1, p.dh = p.dw = 1;
    p.oh = oh, p.ow = ow, p.h = oh, p.w = ow, p.pt = p.pl = 1;
    return p;
  };
  for (const ConvParams &p : {conv(96, 100, 15, 17), conv(64, 64, 7, 7), conv(48, 96, 6, 6),
                              conv(32, 128, 27, 27), conv(128, 32, 27, 28)})
    EXPECT_TRUE(cpu::winograd_applies(p)) << p.c << "->" << p.m << " " << p.oh << "x" << p.ow;
  for (const ConvParams &p : {conv(16, 64, 55, 55), conv(64, 64, 5, 7), conv(128, 32, 26, 27),
                              conv(32, 96, 27, 27), conv(512, 16, 56, 56)})
    EXPECT_FALSE(cpu::winograd_applies(p)) << p.c << "->" << p.m << " " << p.oh << "x" << p.ow;
  ConvParams strided = conv(64, 64, 28, 28);
  strided.sh = 2;
  EXPECT_FALSE(cpu::winograd_applies(strided));
}

TEST(PreparedWeights, MatmulAndGemmMatchReference) {
  const Tensor w = Tensor::randn({70, 45}, 5);
  const Tensor bias = Tensor::randn({45}, 6);
  expect_cpu_matches_reference("matmul", Tensor::randn({3, 33, 70}, 7), {w}, {});
  expect_cpu_matches_reference("fused_matmul", Tensor::randn({33, 70}, 8), {w, bias},
                               {{"activation", std::string("relu")}});
  // transB: w [70, 45] is B^T, so the output is [29, 70].
  expect_cpu_matches_reference("gemm", Tensor::randn({29, 45}, 9), {w, Tensor::randn({70}, 11)},
                               {{"transB", int64_t(1)}});
  expect_cpu_matches_reference("fused_gemm", Tensor::randn({29, 70}, 10), {w, bias},
                               {{"activation", std::string("relu")}, {"alpha", 0.5}});
}

}  // namespace
}  // namespace lumen
