// The CPU pooling kernels' fast paths (vectorized strides 1 and 2, unrolled 2x2 / 3x3 kernels,
// row tails shorter than a vector, blocks of rows spanning planes; in NCHW and in the blocked
// NCHW8c layout, where max pools separably and several windows at a time) against a plain scalar
// implementation of the ONNX definition written here. Max must match exactly (NaNs included);
// averages within float rounding of a double-precision sum.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"

namespace lumen {
namespace {

using testing::random_tensor;
using V = std::vector<int64_t>;

struct Geometry {
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool ceil_mode;
};

// ONNX's output size: windows that would start inside the end padding are dropped in ceil mode.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d, bool ceil) {
  const int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
  if (span < 0) return 0;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + p0) --out;
  return out;
}

// Scalar pooling straight from the definition, float64 sums.
Tensor scalar_pool(const Tensor &x, const Geometry &g, bool is_max, bool count_include_pad) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = out_size(h, g.kh, g.sh, g.pt, g.pb, g.dh, g.ceil_mode);
  const int64_t ow = out_size(w, g.kw, g.sw, g.pl, g.pr, g.dw, g.ceil_mode);
  Tensor y = Tensor::empty({n, c, oh, ow}, DType::Float32);
  const float *xp = x.data<float>();
  float *yp = y.data<float>();
  for (int64_t q = 0; q < n * c; ++q)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double sum = 0;
        float best = -std::numeric_limits<float>::infinity();
        int64_t valid = 0, padded = 0;
        for (int64_t a = 0; a < g.kh; ++a)
          for (int64_t b = 0; b < g.kw; ++b) {
            const int64_t r = i * g.sh - g.pt + a * g.dh, col = j * g.sw - g.pl + b * g.dw;
            // count_include_pad counts the explicit padding, never positions past it.
            if (r < h + g.pb && col < w + g.pr) ++padded;
            if (r < 0 || r >= h || col < 0 || col >= w) continue;
            const float v = xp[(q * h + r) * w + col];
            ++valid;
            sum += v;
            if (std::isnan(v) || std::isnan(best))
              best = std::numeric_limits<float>::quiet_NaN();
            else if (v > best)
              best = v;
          }
        const int64_t count = count_include_pad ? padded : valid;
        yp[(q * oh + i) * ow + j] = is_max ? best : static_cast<float>(sum / double(count));
      }
  return y;
}

Attributes attrs_of(const Geometry &g, bool is_max, bool count_include_pad) {
  Attributes a{{"kernel_shape", V{g.kh, g.kw}},
               {"strides", V{g.sh, g.sw}},
               {"pads", V{g.pt, g.pl, g.pb, g.pr}},
               {"ceil_mode", int64_t{g.ceil_mode}}};
  if (is_max)
    a.set("dilations", V{g.dh, g.dw});
  else
    a.set("count_include_pad", int64_t{count_include_pad});
  return a;
}

// [N, C, H, W] <-> the blocked layout [N, ceil(C / 8), H, W, 8] (channels past C zero).
constexpr int64_t kBlock = 8;
Tensor to_blocked(const Tensor &x) {
  const int64_t n = x.shape()[0], c = x.shape()[1], plane = x.shape()[2] * x.shape()[3];
  const int64_t blocks = (c + kBlock - 1) / kBlock;
  Tensor y = Tensor::empty({n, blocks, x.shape()[2], x.shape()[3], kBlock}, DType::Float32);
  float *yp = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) yp[i] = 0.0f;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t q = 0; q < plane; ++q)
        yp[((b * blocks + ch / kBlock) * plane + q) * kBlock + ch % kBlock] =
            x.data<float>()[(b * c + ch) * plane + q];
  return y;
}
Tensor from_blocked(const Tensor &y, int64_t c) {
  const int64_t n = y.shape()[0], blocks = y.shape()[1], plane = y.shape()[2] * y.shape()[3];
  Tensor x = Tensor::empty({n, c, y.shape()[2], y.shape()[3]}, DType::Float32);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t q = 0; q < plane; ++q)
        x.data<float>()[(b * c + ch) * plane + q] =
            y.data<float>()[((b * blocks + ch / kBlock) * plane + q) * kBlock + ch % kBlock];
  return x;
}

// The CPU kernel on x (NCHW), or on x blocked (the NCHW8c kernels) and unblocked again.
Tensor cpu_pool(const Tensor &x, const Geometry &g, bool is_max, bool count_include_pad,
                bool blocked) {
  const Attributes attrs = attrs_of(g, is_max, count_include_pad);
  if (!blocked) return call_op(is_max ? "max_pool2d" : "avg_pool2d", {x}, attrs, "cpu")[0];
  const Tensor y = call_op(is_max ? "nchwc_max_pool2d" : "nchwc_avg_pool2d", {to_blocked(x)},
                           attrs, "cpu")[0];
  return from_blocked(y, x.shape()[1]);
}

::testing::AssertionResult pool_matches(const Tensor &x, const Geometry &g, bool is_max,
                                        bool count_include_pad, bool blocked = false) {
  const Tensor expected = scalar_pool(x, g, is_max, count_include_pad);
  const Tensor actual = cpu_pool(x, g, is_max, count_include_pad, blocked);
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << actual.shape().to_string() << ", expected "
                                         << expected.shape().to_string();
  const float *a = actual.data<float>(), *e = expected.data<float>();
  for (int64_t k = 0; k < actual.numel(); ++k) {
    const bool same = std::isnan(e[k]) ? std::isnan(a[k])
                      : is_max         ? a[k] == e[k]
                                       : std::abs(a[k] - e[k]) <= 1e-6f + 2e-6f * std::abs(e[k]);
    if (!same)
      return ::testing::AssertionFailure()
             << "element " << k << ": got " << a[k] << ", expected " << e[k];
  }
  return ::testing::AssertionSuccess();
}

std::string describe(const Shape &s, const Geometry &g, bool is_max, bool cip) {
  return std::string(is_max ? "max"
                     : cip  ? "avg(count_include_pad)"
                            : "avg") +
         " x " + s.to_string() + " k " + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " s " +
         std::to_string(g.sh) + "x" + std::to_string(g.sw) + " pads " + std::to_string(g.pt) + "," +
         std::to_string(g.pl) + "," + std::to_string(g.pb) + "," + std::to_string(g.pr) + " d " +
         std::to_string(g.dh) + "x" + std::to_string(g.dw) + (g.ceil_mode ? " ceil" : "");
}

// Kernels 2, 3 (unrolled) and 7 (generic), strides 1, 2 (vectorized) and 3 (fallback), widths
// around the 16-lane vector, with and without pads and ceil_mode, one and many planes.
TEST(PoolKernels, MatchScalarDefinition) {
  const std::vector<Shape> shapes = {{1, 1, 1, 1},   {1, 1, 9, 15},  {1, 1, 16, 16},
                                     {1, 3, 17, 17}, {2, 5, 7, 33},  {1, 37, 14, 14},
                                     {1, 4, 29, 47}, {1, 2, 40, 111}};
  struct Pads {
    int64_t t, l, b, r;
  };
  const std::vector<Pads> pads = {{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 0, 1, 1}, {1, 2, 0, 1}};
  uint64_t seed = 1;
  int checked = 0;
  for (const Shape &shape : shapes)
    for (int64_t k : {2, 3, 7})
      for (int64_t s : {1, 2, 3})
        for (const Pads &p : pads)
          for (bool ceil : {false, true}) {
            const Geometry g{k, k, s, s, p.t, p.l, p.b, p.r, 1, 1, ceil};
            if (p.t >= k || p.l >= k || p.b >= k || p.r >= k) continue;
            if (out_size(shape[2], k, s, p.t, p.b, 1, ceil) <= 0 ||
                out_size(shape[3], k, s, p.l, p.r, 1, ceil) <= 0)
              continue;
            const Tensor x = random_tensor(shape, seed++);
            for (int variant = 0; variant < 3; ++variant)
              for (bool blocked : {false, true}) {
                const bool is_max = variant == 0, cip = variant == 2;
                SCOPED_TRACE(describe(shape, g, is_max, cip) + (blocked ? " blocked" : ""));
                ASSERT_TRUE(pool_matches(x, g, is_max, cip, blocked));
                ++checked;
              }
          }
  EXPECT_GT(checked, 600);
}

// Non-square kernels and strides, and dilated max windows.
TEST(PoolKernels, MixedGeometry) {
  const std::vector<Geometry> cases = {
      {3, 2, 2, 1, 1, 0, 1, 1, 1, 1, false}, {2, 3, 1, 2, 0, 1, 0, 2, 1, 1, true},
      {3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false}, {3, 3, 2, 2, 1, 1, 1, 1, 2, 3, true},
      {1, 1, 2, 2, 0, 0, 0, 0, 1, 1, false}, {7, 7, 1, 1, 0, 0, 0, 0, 1, 1, false},
  };
  uint64_t seed = 100;
  for (const Geometry &g : cases)
    for (const Shape &shape : std::vector<Shape>{{1, 3, 13, 21}, {2, 9, 20, 37}})
      for (int variant = 0; variant < 3; ++variant)
        for (bool blocked : {false, true}) {
          const bool is_max = variant == 0, cip = variant == 2;
          if (!is_max && (g.dh != 1 || g.dw != 1)) continue;  // avg takes no dilations
          SCOPED_TRACE(describe(shape, g, is_max, cip) + (blocked ? " blocked" : ""));
          EXPECT_TRUE(pool_matches(random_tensor(shape, seed++), g, is_max, cip, blocked));
        }
}

// A NaN anywhere in a window, first tap or last, in a row tail or a full vector, makes its max
// NaN; windows without one are unaffected.
TEST(PoolKernels, MaxPropagatesNanFromEveryTap) {
  const Shape shape{1, 3, 12, 35};
  for (int64_t s : {1, 2})
    for (int64_t k : {2, 3}) {
      const Geometry g{k, k, s, s, 1, 1, 1, 1, 1, 1, false};
      for (int64_t pos :
           V{0, 16, 34, 5 * 35 + 17, 12 * 35 - 1, 12 * 35 + 6 * 35 + 31, 3 * 12 * 35 - 1}) {
        Tensor x = random_tensor(shape, 7 + pos);
        x.data<float>()[pos] = std::numeric_limits<float>::quiet_NaN();
        SCOPED_TRACE(describe(shape, g, true, false) + " NaN at " + std::to_string(pos));
        EXPECT_TRUE(pool_matches(x, g, true, false));
        EXPECT_TRUE(pool_matches(x, g, true, false, /*blocked=*/true));
      }
    }
}

// Global average: float64 sums over planes shorter and longer than a vector, many planes.
TEST(PoolKernels, GlobalAverage) {
  uint64_t seed = 500;
  for (const Shape &shape : std::vector<Shape>{{1, 1, 1, 1},
                                               {1, 3, 3, 5},
                                               {2, 7, 4, 4},
                                               {1, 1000, 13, 13},
                                               {1, 64, 7, 7},
                                               {1, 2, 33, 9}}) {
    SCOPED_TRACE(shape.to_string());
    const Tensor x = random_tensor(shape, seed++, -1, 3);
    const Tensor y = call_op("global_avg_pool", {x}, {}, "cpu")[0];
    const int64_t planes = shape[0] * shape[1], size = x.numel() / planes;
    ASSERT_EQ(y.numel(), planes);
    for (int64_t q = 0; q < planes; ++q) {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += x.data<float>()[q * size + i];
      const float expected = static_cast<float>(sum / double(size));
      EXPECT_NEAR(y.data<float>()[q], expected, 1e-7 + 1e-6 * std::abs(expected)) << q;
    }
  }
}

}  // namespace
}  // namespace lumen
