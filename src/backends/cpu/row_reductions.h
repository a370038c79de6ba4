// Reductions over one contiguous row that softmax-like kernels share (softmax, attention's online
// softmax). Each runs in kLanes independent lanes so the loop vectorizes: a single running max or
// sum is a serial dependency the compiler may not reorder. Call them inside vec::run_best.
#pragma once

#include <cstdint>
#include <limits>

#include "backends/common/activation_functors.h"
#include "core/cpu_isa.h"

namespace lumen::cpu {

inline constexpr int64_t kRowLanes = 16;

// The largest of x[0, n); -inf when n is 0. NaN is skipped (x > max is false).
template <class T>
LUMEN_VEC_INLINE inline T row_max(const T *x, int64_t n) {
  T lanes[kRowLanes];
  for (int64_t l = 0; l < kRowLanes; ++l) lanes[l] = -std::numeric_limits<T>::infinity();
  const int64_t body = n - n % kRowLanes;
  for (int64_t k = 0; k < body; k += kRowLanes)
    for (int64_t l = 0; l < kRowLanes; ++l) lanes[l] = x[k + l] > lanes[l] ? x[k + l] : lanes[l];
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t l = 0; l < kRowLanes; ++l) max = lanes[l] > max ? lanes[l] : max;
  for (int64_t k = body; k < n; ++k) max = x[k] > max ? x[k] : max;
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
  double sum = 0;
  for (int64_t l = 0; l < kRowLanes; ++l) sum += lanes[l];
  for (int64_t k = body; k < n; ++k) {
    const T e = act::exp(x[k] - max);
    if constexpr (kStore) y[k] = e;
    sum += e;
  }
  return sum;
}

}  // namespace lumen::cpu
