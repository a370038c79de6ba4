// The window generators (hann_window, hamming_window, blackman_window) and mel_weight_matrix, in
// double, shared by the reference and CPU backends: their inputs are constants in the models that
// use them, so constant folding usually runs them once at compile time.
#pragma once

#include <cmath>
#include <numbers>
#include <vector>

#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen::spectral_window_kernels {

// Input i's single value.
inline int64_t one_value(const KernelContext &ctx, size_t i) {
  const std::vector<double> v = to_f64(ctx, ctx.input(i));
  if (v.size() != 1) ctx.fail("input ", i, " must hold one value, got ", v.size());
  return static_cast<int64_t>(v[0]);
}

template <int Kind>  // 0 hann, 1 hamming, 2 blackman
void window(KernelContext &ctx) {
  const int64_t size = ctx.output(0).shape()[0];
  const bool periodic = ctx.attrs.get_int("periodic", 1) != 0;
  const double n1 = double(periodic ? size : size - 1), pi = std::numbers::pi;
  std::vector<double> y(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double a = 2.0 * pi * double(i) / n1;
    if constexpr (Kind == 0) {
      const double s = std::sin(pi * double(i) / n1);
      y[static_cast<size_t>(i)] = s * s;
    } else if constexpr (Kind == 1) {
      y[static_cast<size_t>(i)] = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a);
    } else {
      y[static_cast<size_t>(i)] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2.0 * a);
    }
  }
  from_f64(ctx, ctx.output(0), y);
}

inline void mel_weight_matrix(KernelContext &ctx) {
  const int64_t bins = one_value(ctx, 0), n = one_value(ctx, 1), rate = one_value(ctx, 2);
  const double lo = to_f64(ctx, ctx.input(3))[0], hi = to_f64(ctx, ctx.input(4))[0];
  const int64_t spec = n / 2 + 1;
  const double lo_mel = 2595.0 * std::log1p(lo / 700.0) / std::log(10.0);
  const double hi_mel = 2595.0 * std::log1p(hi / 700.0) / std::log(10.0);
  const double step = (hi_mel - lo_mel) / double(bins + 2);
  std::vector<int64_t> f(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700.0 * std::expm1((double(i) * step + lo_mel) / 2595.0 * std::log(10.0));
    f[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(double(n + 1) * hz / double(rate)));
  }
  std::vector<double> y(static_cast<size_t>(spec * bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= spec)
      ctx.fail("mel bin ", i, " reaches spectrogram bin ", j, ", outside [0, ", spec,
               "): check the edge frequencies against sample_rate");
    y[static_cast<size_t>(j * bins + i)] = v;
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = f[i], center = f[i + 1], right = f[i + 2];
    if (center == left)
      set(center, i, 1.0);
    else
      for (int64_t j = left; j <= center; ++j) set(j, i, double(j - left) / double(center - left));
    if (right > center)
      for (int64_t j = center; j < right; ++j)
        set(j, i, double(right - j) / double(right - center));
  }
  from_f64(ctx, ctx.output(0), y);
}

}  // namespace lumen::spectral_window_kernels
