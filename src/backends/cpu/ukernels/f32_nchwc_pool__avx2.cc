// Blocked pooling rows (f32_nchwc.h), AVX2: a block's 8 channels per vector, one max or add per
// window tap; NaN is tracked by an unordered compare, since maxps drops a NaN in its first operand.
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace lumen::ukernels {

namespace {

constexpr int kLanes = kNchwcBlock;

// One output at a time, every tap of its window (any pooling, any window).
void pool_row(const NchwcPool &p, int64_t i, float *out) {
  const __m256 nan = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const int64_t row_offset = i * p.sh - p.pt;
  const int64_t a_lo = p.row_lo[i], a_hi = p.row_hi[i];
  for (int64_t j = 0; j < p.ow; ++j) {
    __m256 acc = _mm256_set1_ps(p.max ? -std::numeric_limits<float>::infinity() : 0.0f);
    __m256 bad = _mm256_setzero_ps();
    const int64_t c0 = j * p.sw - p.pl;
    for (int64_t a = a_lo; a < a_hi; ++a) {
      // Column c0 may lie in the padding; only the in-image taps are read.
      const int64_t row = ((row_offset + a * p.dh) * p.w + c0) * kLanes;
      for (int64_t b = p.col_lo[j]; b < p.col_hi[j]; ++b) {
        const __m256 v = _mm256_loadu_ps(p.x + (row + b * p.dw * kLanes));
        if (p.max) {
          bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
          acc = _mm256_max_ps(acc, v);
        } else {
          acc = _mm256_add_ps(acc, v);
        }
      }
    }
    if (p.max)
      acc = _mm256_blendv_ps(acc, nan, bad);
    else
      acc = _mm256_div_ps(acc, _mm256_set1_ps(p.row_div[i] * p.col_div[j]));
    _mm256_storeu_ps(out + j * kLanes, acc);
  }
}

// The max of kTaps vectors (0: `count`), `tap` floats apart from `at`, for kOutputs outputs
// `step` floats apart, into out; NaN where any tap was NaN. Independent outputs keep several max
// chains in flight.
template <int kTaps, int kOutputs>
inline void max_taps(const float *at, int64_t count, int64_t tap, int64_t step, float *out) {
  const int64_t n = kTaps > 0 ? kTaps : count;
  __m256 acc[kOutputs], bad[kOutputs];
#pragma GCC unroll 4
  for (int q = 0; q < kOutputs; ++q) {
    acc[q] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    bad[q] = _mm256_setzero_ps();
  }
#pragma GCC unroll 3
  for (int64_t b = 0; b < n; ++b)
#pragma GCC unroll 4
    for (int q = 0; q < kOutputs; ++q) {
      const __m256 v = _mm256_loadu_ps(at + q * step + b * tap);
      bad[q] = _mm256_or_ps(bad[q], _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      acc[q] = _mm256_max_ps(acc[q], v);
    }
#pragma GCC unroll 4
  for (int q = 0; q < kOutputs; ++q)
    _mm256_storeu_ps(
        out + q * kLanes,
        _mm256_blendv_ps(acc[q], _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), bad[q]));
}

// The max down each of the w columns over `count` rows (`rows` floats apart from `top`).
template <int kRows>
void column_maxima(const float *top, int64_t rows, int64_t count, int64_t w, float *maxima) {
  int64_t c = 0;
  for (; c + 4 <= w; c += 4)
    max_taps<kRows, 4>(top + c * kLanes, count, rows, kLanes, maxima + c * kLanes);
  for (; c < w; ++c) max_taps<kRows, 1>(top + c * kLanes, count, rows, kLanes, maxima + c * kLanes);
}

// A row of outputs of a one-row image of column maxima: windows of kCols taps four at a time
// (0: one at a time, any width).
template <int kCols>
void row_maxima(const NchwcPool &p, const float *m, float *out) {
  const int64_t step = p.sw * kLanes, tap = p.dw * kLanes;
  int64_t j = 0;
  const auto full = [&](int64_t t) { return p.col_hi[t] - p.col_lo[t] == kCols; };
  for (; j < p.ow; ++j) {
    const float *at = m + (j * p.sw - p.pl + p.col_lo[j] * p.dw) * kLanes;
    if (kCols > 0 && j + 4 <= p.ow && full(j) && full(j + 3) && p.col_lo[j] == p.col_lo[j + 3]) {
      // Windows j .. j + 3 keep the same taps (col_lo is monotonic, col_hi - col_lo too).
      max_taps<kCols, 4>(at, kCols, tap, step, out + j * kLanes);
      j += 3;
    } else {
      max_taps<0, 1>(at, p.col_hi[j] - p.col_lo[j], tap, step, out + j * kLanes);
    }
  }
}

// Rows of at most this many pixels are max-pooled separably (the column maxima on the stack).
constexpr int64_t kSeparableMaxWidth = 1024;

}  // namespace

void f32_nchwc_pool_rows__avx2(const NchwcPool &p, int64_t row_begin, int64_t row_end) {
  if (!p.max || p.w > kSeparableMaxWidth) {
    for (int64_t i = row_begin; i < row_end; ++i) pool_row(p, i, p.y + i * p.ow * kLanes);
    return;
  }
  // Max is separable: the maxima down each column over the row's window rows, then the row
  // pooled as a one-row image of them (see the AVX-512 kernel).
  alignas(32) float maxima[kSeparableMaxWidth * kLanes];
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t count = p.row_hi[i] - p.row_lo[i];
    const float *top = p.x + (i * p.sh - p.pt + p.row_lo[i] * p.dh) * p.w * kLanes;
    const int64_t rows = p.dh * p.w * kLanes;
    if (count == 3)
      column_maxima<3>(top, rows, count, p.w, maxima);
    else if (count == 2)
      column_maxima<2>(top, rows, count, p.w, maxima);
    else
      column_maxima<0>(top, rows, count, p.w, maxima);
    float *out = p.y + i * p.ow * kLanes;
    const int64_t width = p.col_hi[p.ow / 2] - p.col_lo[p.ow / 2];  // inside the image
    if (width == 3)
      row_maxima<3>(p, maxima, out);
    else if (width == 2)
      row_maxima<2>(p, maxima, out);
    else
      row_maxima<0>(p, maxima, out);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
