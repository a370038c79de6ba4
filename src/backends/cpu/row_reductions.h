// Reductions over one contiguous row that softmax-like kernels share (softmax, attention's online
// softmax). Each runs in kLanes independent lanes so the loop vectorizes: a single running max or
// sum is a serial dependency the compiler may not reorder. Call them inside vec::run_best.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/common/activation_functors.h"
#include "core/cpu_isa.h"

namespace lumen::cpu {

inline constexpr int64_t kRowLanes = 16;

// lanes[0] = the lanes combined by f, pairwise 8, 4, 2 and 1 apart: a dependency chain 4 deep
// instead of 16 (per row of attention's scores, the serial chains cost as much as the exps).
template <class T, class F>
LUMEN_VEC_INLINE inline T combine_lanes(T (&lanes)[kRowLanes], F f) {
  for (int64_t w = kRowLanes / 2; w >= 1; w /= 2)
    for (int64_t l = 0; l < w; ++l) lanes[l] = f(lanes[l], lanes[l + w]);
  return lanes[0];
}

// The largest of x[0, n); -inf when n is 0. NaN is skipped (x > max is false).
template <class T>
LUMEN_VEC_INLINE inline T row_max(const T *x, int64_t n) {
  // Vectors of lanes (the GCC/Clang vector extension): GCC 12 left a plain array's per-lane
  // `x > lane ? x : lane` scalar, one vmaxss per value. Four of them, so that four maxima are in
  // flight at a time.
  typedef T Lanes __attribute__((vector_size(kRowLanes * sizeof(T))));
  constexpr int64_t kChains = 4;
  const Lanes lowest = Lanes{} - std::numeric_limits<T>::infinity();
  Lanes acc[kChains] = {lowest, lowest, lowest, lowest};
  int64_t k = 0;
  for (; k + kChains * kRowLanes <= n; k += kChains * kRowLanes)
    for (int64_t c = 0; c < kChains; ++c) {
      Lanes v;
      std::memcpy(&v, x + k + c * kRowLanes, sizeof(v));
      acc[c] = v > acc[c] ? v : acc[c];
    }
  for (; k + kRowLanes <= n; k += kRowLanes) {
    Lanes v;
    std::memcpy(&v, x + k, sizeof(v));
    acc[0] = v > acc[0] ? v : acc[0];
  }
  for (int64_t c = 1; c < kChains; ++c) acc[0] = acc[c] > acc[0] ? acc[c] : acc[0];
  T lanes[kRowLanes];
  std::memcpy(lanes, &acc[0], sizeof(lanes));
  const auto larger = [](T a, T b) LUMEN_VEC_INLINE { return b > a ? b : a; };
  T max = combine_lanes(lanes, larger);
  for (; k < n; ++k) max = larger(max, x[k]);
  return max;
}

// The sum of exp(x[k] - max) over [0, n) (act::exp: the polynomial for float32), the lanes added
// in double; with kStore each term is also written to y[k] (y may be x).
template <class T, bool kStore>
LUMEN_VEC_INLINE inline double exp_sum(const T *x, T *y, int64_t n, T max) {
  T lanes[kRowLanes] = {};
  const int64_t body = n - n % kRowLanes;
  for (int64_t k = 0; k < body; k += kRowLanes)
    for (int64_t l = 0; l < kRowLanes; ++l) {
      const T e = act::exp(x[k + l] - max);
      if constexpr (kStore) y[k + l] = e;
      lanes[l] += e;
    }
  double wide[kRowLanes];
  for (int64_t l = 0; l < kRowLanes; ++l) wide[l] = lanes[l];
  double sum = combine_lanes(wide, [](double a, double b) LUMEN_VEC_INLINE { return a + b; });
  for (int64_t k = body; k < n; ++k) {
    const T e = act::exp(x[k] - max);
    if constexpr (kStore) y[k] = e;
    sum += e;
  }
  return sum;
}

}  // namespace lumen::cpu
