// Accuracy of the float32 polynomial exp, sigmoid, tanh and erf (act::f32) against double-precision
// libm over dense sweeps and special values. They replace libm in float32 activations on every
// backend (including the reference), so these bounds are what keeps them honest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backends/common/activation_functors.h"

namespace lumen {
namespace {

// Sweep: a uniform grid over [lo, hi] plus random points, and the neighbours of each branch point.
std::vector<float> sweep(float lo, float hi, std::vector<float> extra = {}) {
  std::vector<float> xs;
  const int n = 400000;
  for (int i = 0; i <= n; ++i) xs.push_back(lo + (hi - lo) * float(i) / float(n));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int i = 0; i < 100000; ++i) xs.push_back(dist(rng));
  for (float e : extra)
    for (float d = -1e-3f; d <= 1e-3f; d += 1e-5f) xs.push_back(e + d);
  return xs;
}

// Max relative error over results with |expected| >= min_normal, max absolute error otherwise.
template <class F, class G>
void check(const char *name, const std::vector<float> &xs, F fast, G exact, double max_rel,
           double max_abs) {
  double worst_rel = 0, worst_abs = 0, at_rel = 0, at_abs = 0;
  for (float x : xs) {
    const double want = exact(double(x)), got = double(fast(x));
    const double err = std::fabs(got - want);
    if (std::fabs(want) >= double(std::numeric_limits<float>::min())) {
      if (err / std::fabs(want) > worst_rel) worst_rel = err / std::fabs(want), at_rel = x;
    }
    if (err > worst_abs) worst_abs = err, at_abs = x;
  }
  EXPECT_LE(worst_rel, max_rel) << name << " worst relative error at x = " << at_rel;
  EXPECT_LE(worst_abs, max_abs) << name << " worst absolute error at x = " << at_abs;
}

TEST(FastMath, Exp) {
  const auto exact = [](double x) { return std::exp(x); };
  // Relative 2.5e-7 (about 2 ulp) where the result is a normal float; subnormal results within
  // one subnormal step; large results are checked relatively only.
  check("exp", sweep(-87.0f, 88.7f, {0.0f, 0.3466f, -0.3466f}), act::f32::exp, exact, 2.5e-7,
        std::numeric_limits<double>::infinity());
  check("exp subnormal", sweep(-103.0f, -87.4f), act::f32::exp, exact, 2.5e-7, 3e-45);
  EXPECT_EQ(act::f32::exp(-200.0f), 0.0f);
  EXPECT_EQ(act::f32::exp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(act::f32::exp(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(act::f32::exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(act::f32::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(act::f32::exp(0.0f), 1.0f);
}

TEST(FastMath, Sigmoid) {
  const auto exact = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  check("sigmoid", sweep(-80.0f, 40.0f, {0.0f}), act::f32::sigmoid, exact, 3e-7, 1e-7);
  EXPECT_EQ(act::f32::sigmoid(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(act::f32::sigmoid(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(act::f32::sigmoid(std::numeric_limits<float>::quiet_NaN())));
  // Beyond the clamp of exp_for_denominator: 0 or 1, within a subnormal of the exact value.
  check("sigmoid tails", sweep(-120.0f, -85.0f), act::f32::sigmoid, exact, 3e-7, 6.1e-39);
  EXPECT_EQ(act::f32::sigmoid(100.0f), 1.0f);
}

TEST(FastMath, Silu) {
  const auto exact = [](double x) { return x / (1.0 + std::exp(-x)); };
  check("silu", sweep(-88.0f, 90.0f, {0.0f}), act::f32::silu, exact, 3e-7,
        std::numeric_limits<double>::infinity());
  // -0 below -88.03 (the exact value is under 88 * 6.1e-39 in magnitude).
  check("silu far left", sweep(-1000.0f, -88.0f), act::f32::silu, exact, 1.0, 6e-37);
  EXPECT_EQ(act::f32::silu(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(act::f32::silu(-0.0f)));
  EXPECT_TRUE(std::isnan(act::f32::silu(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMath, HardSwish) {
  const act::HardSwish<float> hard_swish{Attributes{}};
  for (float x = -8.0f; x <= 8.0f; x += 1.0f / 64) {
    const double gate = std::clamp(double(x) / 6.0 + 0.5, 0.0, 1.0);
    EXPECT_NEAR(hard_swish(x), double(x) * gate, 1e-6 * std::max(1.0f, std::fabs(x))) << x;
  }
  EXPECT_EQ(hard_swish(-3.5f), 0.0f);
  EXPECT_EQ(hard_swish(4.0f), 4.0f);
  EXPECT_TRUE(std::isnan(hard_swish(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(hard_swish(-std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMath, Tanh) {
  const auto exact = [](double x) { return std::tanh(x); };
  check("tanh", sweep(-12.0f, 12.0f, {0.625f, -0.625f, 0.0f}), act::f32::tanh, exact, 3e-7, 1e-7);
  check("tanh tiny", sweep(-1e-3f, 1e-3f), act::f32::tanh, exact, 3e-7, 3e-10);
  EXPECT_EQ(act::f32::tanh(50.0f), 1.0f);
  EXPECT_EQ(act::f32::tanh(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(act::f32::tanh(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::signbit(act::f32::tanh(-0.0f)));
}

TEST(FastMath, Erf) {
  const auto exact = [](double x) { return std::erf(x); };
  check("erf", sweep(-6.0f, 6.0f, {1.0f, -1.0f, 4.0f, -4.0f, 0.0f}), act::f32::erf, exact, 3e-7,
        1.5e-7);
  check("erf tiny", sweep(-1e-3f, 1e-3f), act::f32::erf, exact, 3e-7, 3e-10);
  EXPECT_EQ(act::f32::erf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(act::f32::erf(-10.0f), -1.0f);
  EXPECT_TRUE(std::isnan(act::f32::erf(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace lumen
