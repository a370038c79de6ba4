// Blocked pooling rows (f32_nchwc.h), AVX-512: separably (down the columns, then along the
// row), two outputs of a block's 8 channels per 16-lane vector where their windows have the same
// taps (all but the edge columns), one output at a time elsewhere; one max or add per window tap
// where a row is too wide to pool separably; NaN tracked in a mask by an unordered compare (maxps
// drops a NaN in its first operand).
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX512F__)
#include <limits>

#include "backends/cpu/ukernels/avx512_halves.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = kNchwcBlock;

// Outputs j .. j + 2 * kPairs - 1 of row i, two to a vector (Pair), or output j alone (a half
// vector), every tap of their windows: average pooling, and the edges of max pooling's rows.
// Several pairs at a time keep that many independent chains in flight (one pair's chain of
// dependent taps left the loop waiting on their latency).
template <bool Pair, int kPairs = 1>
inline void pool_outputs(const NchwcPool &p, int64_t i, int64_t j, float *out) {
  const int64_t row_offset = i * p.sh - p.pt, c0 = j * p.sw - p.pl;
  const int64_t step = p.sw * kLanes;  // floats between two outputs' windows
  const __mmask16 lanes = Pair ? 0xFFFF : 0x00FF;
  __m512 acc[kPairs];
  __mmask16 bad[kPairs];
  for (int q = 0; q < kPairs; ++q) {
    acc[q] = _mm512_set1_ps(p.max ? -std::numeric_limits<float>::infinity() : 0.0f);
    bad[q] = 0;
  }
  for (int64_t a = p.row_lo[i]; a < p.row_hi[i]; ++a) {
    // Column c0 may lie in the padding; only the in-image taps are read.
    const float *row = p.x + ((row_offset + a * p.dh) * p.w + c0) * kLanes;
    for (int64_t b = p.col_lo[j]; b < p.col_hi[j]; ++b) {
      const float *at = row + b * p.dw * kLanes;
#pragma GCC unroll 4
      for (int q = 0; q < kPairs; ++q) {
        const float *pair = at + 2 * q * step;
        __m512 v;
        if (!Pair)
          v = _mm512_castps256_ps512(_mm256_loadu_ps(pair));
        else if (step == kLanes)
          v = _mm512_loadu_ps(pair);
        else
          v = load_halves(pair, step);
        if (p.max) {
          bad[q] |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
          acc[q] = _mm512_max_ps(acc[q], v);
        } else {
          acc[q] = _mm512_add_ps(acc[q], v);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int q = 0; q < kPairs; ++q) {
    const int64_t first = j + 2 * q;
    if (p.max) {
      acc[q] = _mm512_mask_mov_ps(acc[q], bad[q],
                                  _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    } else {
      // The two outputs' divisors, one per half.
      const __m512 divisors =
          _mm512_mask_blend_ps(__mmask16(0xFF00), _mm512_set1_ps(p.row_div[i] * p.col_div[first]),
                               _mm512_set1_ps(p.row_div[i] * p.col_div[Pair ? first + 1 : first]));
      acc[q] = _mm512_div_ps(acc[q], divisors);
    }
    _mm512_mask_storeu_ps(out + first * kLanes, lanes, acc[q]);
  }
}

// Whether outputs [j, j + n) of a row exist and their windows keep the same taps (each window
// is the previous one moved by a stride).
inline bool same_taps(const NchwcPool &p, int64_t j, int64_t n) {
  if (j + n > p.ow) return false;
  for (int64_t t = j + 1; t < j + n; ++t)
    if (p.col_lo[t] != p.col_lo[j] || p.col_hi[t] != p.col_hi[j]) return false;
  return true;
}

// Outputs of row i of the plane p describes, windows left to right.
inline void pool_row(const NchwcPool &p, int64_t i, float *out) {
  int64_t j = 0;
  while (j < p.ow) {
    if (same_taps(p, j, 8)) {
      pool_outputs<true, 4>(p, i, j, out);
      j += 8;
    } else if (same_taps(p, j, 2)) {
      pool_outputs<true>(p, i, j, out);
      j += 2;
    } else {
      pool_outputs<false>(p, i, j, out);
      j += 1;
    }
  }
}

// The max (Max) or sum down each column c of `rows` (kRows of them; 0: `count`), at out[c]:
// columns [c, c + kPixels) per call, two to a vector (kPixels even) or one; a max is NaN where
// any was NaN (a sum is by itself).
template <bool Max, int kRows, int kPixels>
inline void column_reduce(const float *const *rows, int64_t count, int64_t c, float *out) {
  constexpr int kVectors = (kPixels + 1) / 2;
  const __mmask16 lanes = kPixels % 2 ? 0x00FF : 0xFFFF;
  const int64_t n = kRows > 0 ? kRows : count;
  __m512 acc[kVectors];
  __mmask16 bad[kVectors];
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    acc[v] = _mm512_set1_ps(Max ? -std::numeric_limits<float>::infinity() : 0.0f);
    bad[v] = 0;
  }
#pragma GCC unroll 3
  for (int64_t a = 0; a < n; ++a) {
    const float *row = rows[a] + c * kLanes;
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __m512 x = _mm512_maskz_loadu_ps(lanes, row + 2 * v * kLanes);
      if constexpr (Max) {
        bad[v] = _kor_mask16(bad[v], _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q));
        acc[v] = _mm512_max_ps(acc[v], x);
      } else {
        acc[v] = _mm512_add_ps(acc[v], x);
      }
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v)
    _mm512_mask_storeu_ps(
        out + (c + 2 * v) * kLanes, lanes,
        Max ? _mm512_mask_mov_ps(acc[v], bad[v],
                                 _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()))
            : acc[v]);
}

template <bool Max, int kRows>
void row_column_reduce(const float *const *rows, int64_t count, int64_t w, float *out) {
  int64_t c = 0;
  for (; c + 8 <= w; c += 8) column_reduce<Max, kRows, 8>(rows, count, c, out);
  for (; c + 2 <= w; c += 2) column_reduce<Max, kRows, 2>(rows, count, c, out);
  if (c < w) column_reduce<Max, kRows, 1>(rows, count, c, out);
}

// Outputs [j, j + 2 * kPairs) of a row of column maxima or sums m whose windows all keep the
// same kCols taps, two to a vector, every tap of every window unrolled; a sum divided by its
// window's count (row_pool.row_div[0]: the pooled row's factor).
template <bool Max, int kCols, int kPairs>
inline void row_reduce(const NchwcPool &p, const float *m, int64_t j, float *out) {
  const int64_t step = p.sw * kLanes, tap = p.dw * kLanes;
  const float *at = m + (j * p.sw - p.pl + p.col_lo[j] * p.dw) * kLanes;
  __m512 acc[kPairs];
  __mmask16 bad[kPairs];
#pragma GCC unroll 4
  for (int q = 0; q < kPairs; ++q) {
    acc[q] = load_halves(at + 2 * q * step, step);
    bad[q] = Max ? _mm512_cmp_ps_mask(acc[q], acc[q], _CMP_UNORD_Q) : 0;
  }
#pragma GCC unroll 4
  for (int b = 1; b < kCols; ++b)
#pragma GCC unroll 4
    for (int q = 0; q < kPairs; ++q) {
      const __m512 x = load_halves(at + 2 * q * step + b * tap, step);
      if constexpr (Max) {
        bad[q] = _kor_mask16(bad[q], _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q));
        acc[q] = _mm512_max_ps(acc[q], x);
      } else {
        acc[q] = _mm512_add_ps(acc[q], x);
      }
    }
#pragma GCC unroll 4
  for (int q = 0; q < kPairs; ++q) {
    __m512 v;
    if constexpr (Max) {
      v = _mm512_mask_mov_ps(acc[q], bad[q],
                             _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    } else {
      const int64_t first = j + 2 * q;
      const float row = p.row_div[0];
      v = _mm512_div_ps(
          acc[q], _mm512_mask_blend_ps(__mmask16(0xFF00), _mm512_set1_ps(row * p.col_div[first]),
                                       _mm512_set1_ps(row * p.col_div[first + 1])));
    }
    _mm512_storeu_ps(out + (j + 2 * q) * kLanes, v);
  }
}

// Pooling of a row of column maxima or sums (row_pool: its one-row image) into out: runs of
// outputs with the same taps through row_reduce, the rest one or two at a time.
template <bool Max, int kCols>
void pool_reduced_row(const NchwcPool &row_pool, float *out) {
  int64_t j = 0;
  while (j < row_pool.ow) {
    if (row_pool.col_hi[j] - row_pool.col_lo[j] == kCols && same_taps(row_pool, j, 8)) {
      row_reduce<Max, kCols, 4>(row_pool, row_pool.x, j, out);
      j += 8;
    } else if (row_pool.col_hi[j] - row_pool.col_lo[j] == kCols && same_taps(row_pool, j, 2)) {
      row_reduce<Max, kCols, 1>(row_pool, row_pool.x, j, out);
      j += 2;
    } else {
      pool_outputs<false>(row_pool, 0, j, out);
      j += 1;
    }
  }
}

// Rows of at most this many pixels are pooled separably (the column maxima or sums on the
// stack).
constexpr int64_t kSeparableMaxWidth = 1024;

// Max and average are separable: the maxima (sums) down each column over the row's window rows
// first, read in whole vectors, then the row pooled as a one-row image of them. 3x3 windows: 6
// loads and maxima (additions) per output instead of 9 (SqueezeNet's 3x3 stride-2 max pools: 1.6x
// onnxruntime's time with 9).
template <bool Max>
void pool_rows_separably(const NchwcPool &p, int64_t row_begin, int64_t row_end) {
  alignas(64) float reduced[kSeparableMaxWidth * kLanes];
  const int64_t zero = 0, one = 1;
  NchwcPool row_pool = p;
  row_pool.x = reduced;
  row_pool.sh = row_pool.pt = row_pool.dh = 0;
  row_pool.row_lo = &zero, row_pool.row_hi = &one;
  constexpr int64_t kMostRows = 64;
  for (int64_t i = row_begin; i < row_end; ++i) {
    const float *rows[kMostRows];
    const int64_t count = p.row_hi[i] - p.row_lo[i];
    if (count > kMostRows) {  // a tall window: the taps one by one
      pool_row(p, i, p.y + i * p.ow * kLanes);
      continue;
    }
    for (int64_t a = 0; a < count; ++a)
      rows[a] = p.x + (i * p.sh - p.pt + (p.row_lo[i] + a) * p.dh) * p.w * kLanes;
    if (count == 3)
      row_column_reduce<Max, 3>(rows, count, p.w, reduced);
    else if (count == 2)
      row_column_reduce<Max, 2>(rows, count, p.w, reduced);
    else
      row_column_reduce<Max, 0>(rows, count, p.w, reduced);
    if (!Max) row_pool.row_div = p.row_div + i;  // the pooled row's count factor
    float *out = p.y + i * p.ow * kLanes;
    if (p.col_hi[p.ow / 2] - p.col_lo[p.ow / 2] == 3)  // the window's width inside the image
      pool_reduced_row<Max, 3>(row_pool, out);
    else if (p.col_hi[p.ow / 2] - p.col_lo[p.ow / 2] == 2)
      pool_reduced_row<Max, 2>(row_pool, out);
    else
      pool_row(row_pool, 0, out);
  }
}

}  // namespace

void f32_nchwc_pool_rows__avx512(const NchwcPool &p, int64_t row_begin, int64_t row_end) {
  if (p.w > kSeparableMaxWidth) {
    for (int64_t i = row_begin; i < row_end; ++i) pool_row(p, i, p.y + i * p.ow * kLanes);
    return;
  }
  if (p.max)
    pool_rows_separably<true>(p, row_begin, row_end);
  else
    pool_rows_separably<false>(p, row_begin, row_end);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
