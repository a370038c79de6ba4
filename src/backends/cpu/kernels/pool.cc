// CPU pooling: planes (n, c) split over the pool. Each output row combines its window's input
// rows into one row first, then that row's columns tap by tap over the whole output row (valid
// column ranges found once per call, so the inner loops have no bounds checks and vectorize,
// compiled for the best ISA at run time); float32 strides 1 and 2 on AVX-512 and AVX2 machines use
// the explicitly vectorized paths below. Same semantics as the reference kernels (max propagates
// NaN; an empty average is NaN, an empty max -inf).
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_params.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

#if LUMEN_VEC_X86
#include <immintrin.h>

#include "backends/cpu/ukernels/avx512_lanes.h"
#endif

namespace lumen {
namespace {

// Grain for parallel_for over planes: about 64K elements of work per chunk.
inline int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work_per_plane));
}

#if LUMEN_VEC_X86
// float32 pooling for AVX-512 (and, further down, AVX2) machines, strides 1 and 2 (every other
// case goes through the generic loops of pool2d below). Per block of output rows: a vertical pass
// combines each window's input rows into a scratch row that carries the padding as neutral values
// (-inf / 0) on both sides, then a horizontal pass combines kw taps per output column with plain
// (stride 1) or even-lane (stride 2) loads from it; no bounds checks outside the masked row tails.
struct PoolPlan {
  int64_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
  int64_t ld;          // floats per scratch row
  int64_t block_rows;  // output rows per vertical + horizontal block
  int64_t pf;          // prefetch distance in floats
  bool is_max;
  // Per output row: the kernel rows [row_lo, row_hi) inside the input.
  std::vector<int64_t> row_lo, row_hi;
  // avg: the divisor of output (i, j) is row_div[i] * col_div[j] (a small integer, exact).
  std::vector<float> row_div, col_div;
};

// maxps, spelled so that GCC 12 does not warn about its undefined pass-through operand.
LUMEN_TARGET_AVX512 inline __m512 max16(__m512 a, __m512 b) {
  return _mm512_maskz_max_ps(__mmask16(0xffff), a, b);
}

// acc combined with v; for max, lanes where either is NaN are added to `bad` (maxps returns its
// second operand then, so a NaN already in acc would be lost).
template <bool kMax>
LUMEN_TARGET_AVX512 inline __m512 combine16(__m512 acc, __m512 v, __mmask16 &bad) {
  if constexpr (kMax) {
    bad |= _mm512_cmp_ps_mask(acc, v, _CMP_UNORD_Q);
    return max16(acc, v);
  } else {
    return _mm512_add_ps(acc, v);
  }
}

// The vertical pass of output row i into the scratch row s (columns from -pl). kKh > 0: the
// kernel height, fully unrolled for windows that lie inside the input.
template <bool kMax, int kKh>
LUMEN_TARGET_AVX512 inline void pool_rows_avx512(const PoolPlan &p, const float *xq, int64_t i,
                                                 float *s) {
  const int64_t n = p.row_hi[i] - p.row_lo[i];
  const float *r0 = xq + (i * p.sh - p.pt + p.row_lo[i] * p.dh) * p.w;
  const int64_t step = p.dh * p.w;
  float *dst = s + p.pl;
  const __m512 nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const __m512 init = _mm512_set1_ps(kMax ? -std::numeric_limits<float>::infinity() : 0.f);
  if (n == 0) {
    for (int64_t x = 0; x < p.w; x += 16)
      _mm512_mask_storeu_ps(dst + x, ukernels::first_lanes(p.w - x), init);
    return;
  }
  for (int64_t x = 0; x < p.w; x += 16) {
    const __mmask16 m = ukernels::first_lanes(p.w - x);
    _mm_prefetch(reinterpret_cast<const char *>(r0 + p.pf + x), _MM_HINT_T0);
    __m512 acc = _mm512_maskz_loadu_ps(m, r0 + x);
    __mmask16 bad = 0;
    if (kKh > 0 && n == kKh) {
      for (int k = 1; k < kKh; ++k)
        acc = combine16<kMax>(acc, _mm512_maskz_loadu_ps(m, r0 + k * step + x), bad);
    } else {
      for (int64_t k = 1; k < n; ++k)
        acc = combine16<kMax>(acc, _mm512_maskz_loadu_ps(m, r0 + k * step + x), bad);
    }
    if constexpr (kMax) acc = _mm512_mask_mov_ps(acc, bad, nan);
    _mm512_mask_storeu_ps(dst + x, m, acc);
  }
}

// One tap of 16 output columns from j: s[j * sw + off], sw 1 or 2.
template <int kStride>
LUMEN_TARGET_AVX512 inline __m512 tap16(const float *s, int64_t j, int64_t off) {
  if constexpr (kStride == 1) {
    return _mm512_loadu_ps(s + j + off);
  } else {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const float *q = s + 2 * j + off;
    return _mm512_permutex2var_ps(_mm512_loadu_ps(q), even, _mm512_loadu_ps(q + 16));
  }
}

// The horizontal pass of output row i from scratch row s; kKw > 0: the kernel width, unrolled.
template <bool kMax, int kStride, int kKw>
LUMEN_TARGET_AVX512 inline void pool_cols_avx512(const PoolPlan &p, const float *s, int64_t i,
                                                 float *out) {
  const __m512 nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const __m512 row_div = _mm512_set1_ps(kMax ? 1.f : p.row_div[i]);
  const int64_t kw = kKw > 0 ? kKw : p.kw;
  for (int64_t j = 0; j < p.ow; j += 16) {
    __m512 acc = tap16<kStride>(s, j, 0);
    __mmask16 bad = 0;
    for (int64_t b = 1; b < kw; ++b)
      acc = combine16<kMax>(acc, tap16<kStride>(s, j, b * p.dw), bad);
    if constexpr (kMax)
      acc = _mm512_mask_mov_ps(acc, bad, nan);
    else
      acc = _mm512_div_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(p.col_div.data() + j), row_div));
    _mm512_mask_storeu_ps(out + j, ukernels::first_lanes(p.ow - j), acc);
  }
}

// pool_planes_best for this stride, with the common square kernels unrolled.
template <bool kMax, int kStride, int kKh, int kKw>
void pool_planes_best(bool avx512, const PoolPlan &p, const float *x, float *y, int64_t begin,
                      int64_t end, float *scratch);
template <bool kMax, int kStride>
void pool_planes_dispatch(bool avx512, const PoolPlan &p, const float *x, float *y, int64_t begin,
                          int64_t end, float *scratch) {
  if (p.kh == 3 && p.kw == 3)
    pool_planes_best<kMax, kStride, 3, 3>(avx512, p, x, y, begin, end, scratch);
  else if (p.kh == 2 && p.kw == 2)
    pool_planes_best<kMax, kStride, 2, 2>(avx512, p, x, y, begin, end, scratch);
  else
    pool_planes_best<kMax, kStride, 0, 0>(avx512, p, x, y, begin, end, scratch);
}

// Up to 8 floats from p (left of them readable) widened to double. (Masked forms: the unmasked
// ones make GCC 12 warn about their undefined pass-through operand.)
LUMEN_TARGET_AVX512 inline __m512d load8_f64(const float *p, int64_t left) {
  const __mmask8 m = left >= 8 ? __mmask8(0xff) : __mmask8((1u << std::max<int64_t>(left, 0)) - 1);
  return _mm512_maskz_cvtps_pd(__mmask8(0xff), _mm256_maskz_loadu_ps(m, p));
}

// Sum of n floats in double, eight lanes of partial sums in each of two accumulators.
LUMEN_TARGET_AVX512 inline double sum_f64_avx512(const float *x, int64_t n) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    acc0 = _mm512_add_pd(acc0, load8_f64(x + i, n - i));
    acc1 = _mm512_add_pd(acc1, load8_f64(x + i + 8, n - i - 8));
  }
  const __m512d acc = _mm512_add_pd(acc0, acc1);
  const __m256d acc4 = _mm256_add_pd(_mm512_maskz_extractf64x4_pd(0xf, acc, 0),
                                     _mm512_maskz_extractf64x4_pd(0xf, acc, 1));
  const __m128d acc2 = _mm_add_pd(_mm256_castpd256_pd128(acc4), _mm256_extractf128_pd(acc4, 1));
  return _mm_cvtsd_f64(acc2) + _mm_cvtsd_f64(_mm_unpackhi_pd(acc2, acc2));
}

LUMEN_TARGET_AVX512 void global_avg_avx512(const float *x, float *y, int64_t size, int64_t begin,
                                           int64_t end) {
  for (int64_t q = begin; q < end; ++q)
    y[q] = static_cast<float>(sum_f64_avx512(x + q * size, size) / static_cast<double>(size));
}
// The same two passes for AVX2 machines, 8 lanes at a time. No masked stores (AMD's vmaskmovps
// store is microcoded): a scratch row's last vector is stored whole with its lanes past the row
// set to the neutral value (the scratch row's right padding holds that value anyway), and an
// output row's last partial vector goes through a buffer.
template <bool kMax>
LUMEN_TARGET_AVX2 inline __m256 combine8(__m256 acc, __m256 v, __m256 &bad) {
  if constexpr (kMax) {
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(acc, v, _CMP_UNORD_Q));
    return _mm256_max_ps(acc, v);
  } else {
    return _mm256_add_ps(acc, v);
  }
}

// Lanes [0, count) of 8 as a vmaskmovps / blend mask.
LUMEN_TARGET_AVX2 inline __m256 first_lanes8(int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int c = static_cast<int>(std::clamp<int64_t>(count, 0, 8));
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(c), lane));
}

// 8 floats at q, or (a row's last partial vector) the lanes of m and zeros.
LUMEN_TARGET_AVX2 inline __m256 load8(const float *q, bool full, __m256 m) {
  return full ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, _mm256_castps_si256(m));
}

template <bool kMax, int kKh>
LUMEN_TARGET_AVX2 inline void pool_rows_avx2(const PoolPlan &p, const float *xq, int64_t i,
                                             float *s) {
  const int64_t n = p.row_hi[i] - p.row_lo[i];
  const float *r0 = xq + (i * p.sh - p.pt + p.row_lo[i] * p.dh) * p.w;
  const int64_t step = p.dh * p.w;
  float *dst = s + p.pl;
  const __m256 nan = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const __m256 init = _mm256_set1_ps(kMax ? -std::numeric_limits<float>::infinity() : 0.f);
  for (int64_t x = 0; x < p.w; x += 8) {
    const __m256 m = first_lanes8(p.w - x);
    const bool full = x + 8 <= p.w;
    __m256 acc = init;
    if (n > 0) {
      _mm_prefetch(reinterpret_cast<const char *>(r0 + p.pf + x), _MM_HINT_T0);
      acc = load8(r0 + x, full, m);
      __m256 bad = _mm256_setzero_ps();
      if (kKh > 0 && n == kKh) {
        for (int k = 1; k < kKh; ++k)
          acc = combine8<kMax>(acc, load8(r0 + k * step + x, full, m), bad);
      } else {
        for (int64_t k = 1; k < n; ++k)
          acc = combine8<kMax>(acc, load8(r0 + k * step + x, full, m), bad);
      }
      if constexpr (kMax) acc = _mm256_blendv_ps(acc, nan, bad);
    }
    _mm256_storeu_ps(dst + x, _mm256_blendv_ps(init, acc, m));
  }
}

// One tap of 8 output columns from j: s[j * sw + off], sw 1 or 2.
template <int kStride>
LUMEN_TARGET_AVX2 inline __m256 tap8(const float *s, int64_t j, int64_t off) {
  if constexpr (kStride == 1) {
    return _mm256_loadu_ps(s + j + off);
  } else {
    const float *q = s + 2 * j + off;
    // [q0 q2 r0 r2 | q4 q6 r4 r6] -> [q0 q2 q4 q6 r0 r2 r4 r6]
    const __m256 packed =
        _mm256_shuffle_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8), _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(packed), _MM_SHUFFLE(3, 1, 2, 0)));
  }
}

template <bool kMax, int kStride, int kKw>
LUMEN_TARGET_AVX2 inline void pool_cols_avx2(const PoolPlan &p, const float *s, int64_t i,
                                             float *out) {
  const __m256 nan = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const __m256 row_div = _mm256_set1_ps(kMax ? 1.f : p.row_div[i]);
  const int64_t kw = kKw > 0 ? kKw : p.kw;
  for (int64_t j = 0; j < p.ow; j += 8) {
    __m256 acc = tap8<kStride>(s, j, 0);
    __m256 bad = _mm256_setzero_ps();
    for (int64_t b = 1; b < kw; ++b) acc = combine8<kMax>(acc, tap8<kStride>(s, j, b * p.dw), bad);
    if constexpr (kMax)
      acc = _mm256_blendv_ps(acc, nan, bad);
    else
      acc = _mm256_div_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(p.col_div.data() + j), row_div));
    if (j + 8 <= p.ow) {
      _mm256_storeu_ps(out + j, acc);
    } else {
      alignas(32) float tail[8];
      _mm256_store_ps(tail, acc);
      std::copy(tail, tail + (p.ow - j), out + j);
    }
  }
}

// Sum of n floats in double, four lanes of partial sums in each of two accumulators.
LUMEN_TARGET_AVX2 inline double sum_f64_avx2(const float *x, int64_t n) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
  }
  const __m256d acc = _mm256_add_pd(acc0, acc1);
  const __m128d acc2 = _mm_add_pd(_mm256_castpd256_pd128(acc), _mm256_extractf128_pd(acc, 1));
  double sum = _mm_cvtsd_f64(acc2) + _mm_cvtsd_f64(_mm_unpackhi_pd(acc2, acc2));
  for (; i < n; ++i) sum += static_cast<double>(x[i]);
  return sum;
}

LUMEN_TARGET_AVX2 void global_avg_avx2(const float *x, float *y, int64_t size, int64_t begin,
                                       int64_t end) {
  for (int64_t q = begin; q < end; ++q)
    y[q] = static_cast<float>(sum_f64_avx2(x + q * size, size) / static_cast<double>(size));
}

// Output rows [begin, end) of all planes counted together, in blocks that may span planes (so
// small planes still fill a block and the horizontal pass reads rows stored long before); each
// row's passes compiled for AVX-512 or AVX2 (a call per row, not inlined across the targets).
template <bool kMax, int kStride, int kKh, int kKw>
void pool_planes_best(bool avx512, const PoolPlan &p, const float *x, float *y, int64_t begin,
                      int64_t end, float *scratch) {
  const int64_t in_plane = p.h * p.w;
  for (int64_t r0 = begin; r0 < end; r0 += p.block_rows) {
    const int64_t r1 = std::min(end, r0 + p.block_rows);
    int64_t q = r0 / p.oh, i = r0 % p.oh;
    for (int64_t r = r0; r < r1; ++r) {
      float *row = scratch + (r - r0) * p.ld;
      if (avx512)
        pool_rows_avx512<kMax, kKh>(p, x + q * in_plane, i, row);
      else
        pool_rows_avx2<kMax, kKh>(p, x + q * in_plane, i, row);
      if (++i == p.oh) i = 0, ++q;
    }
    i = r0 % p.oh;
    for (int64_t r = r0; r < r1; ++r) {
      const float *row = scratch + (r - r0) * p.ld;
      if (avx512)
        pool_cols_avx512<kMax, kStride, kKw>(p, row, i, y + r * p.ow);
      else
        pool_cols_avx2<kMax, kStride, kKw>(p, row, i, y + r * p.ow);
      if (++i == p.oh) i = 0;
    }
  }
}
#endif

template <class T, bool kIsMax>
void pool2d(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Tensor &ty = ctx.output(0);
  const auto kernel = ctx.attrs.get_ints("kernel_shape", {});
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  const bool count_include_pad = ctx.attrs.get_int("count_include_pad", 0) != 0;
  if (kernel.size() != 2) ctx.fail("attribute 'kernel_shape' must have 2 values");
  const int64_t planes = tx.shape()[0] * tx.shape()[1];
  const int64_t h = tx.shape()[2], w = tx.shape()[3];
  const int64_t oh = ty.shape()[2], ow = ty.shape()[3];
  const int64_t kh = kernel[0], kw = kernel[1], sh = strides[0], sw = strides[1];
  const int64_t dh = dilations[0], dw = dilations[1];
  if (ty.numel() == 0) return;
  const T *x = tx.data<T>();
  T *y = ty.data<T>();
  const int64_t in_plane = h * w, out_plane = oh * ow;
#if LUMEN_VEC_X86
  if constexpr (std::is_same_v<T, float>) {
    if (vec::cpu_isa() >= vec::Isa::Avx2 && (sw == 1 || sw == 2)) {
      const bool avx512 = vec::cpu_isa() == vec::Isa::Avx512;
      // Reused across calls: no allocations once the largest shape has been seen.
      thread_local PoolPlan plan;
      PoolPlan &p = plan;
      p = {h,
           w,
           oh,
           ow,
           kh,
           kw,
           sh,
           sw,
           dh,
           dw,
           pads[0],
           pads[1],
           0,
           0,
           0,
           kIsMax,
           std::move(p.row_lo),
           std::move(p.row_hi),
           std::move(p.row_div),
           std::move(p.col_div)};
      // Scratch rows hold the padded input row (stored in whole vectors) and every tap's loads.
      const int64_t lanes = avx512 ? 16 : 8;
      const auto round_up = [&](int64_t v) { return (v + lanes - 1) / lanes * lanes; };
      const int64_t ow_lanes = round_up(ow);
      p.ld = round_up(std::max(p.pl + round_up(w), ow_lanes * sw + (kw - 1) * dw + lanes));
      p.block_rows = std::max<int64_t>(4096 / p.ld, 1);
      p.pf = (kh + 4 * sh) * w;
      p.row_lo.resize(oh);
      p.row_hi.resize(oh);
      p.row_div.resize(oh);
      p.col_div.assign(ow_lanes, 1.f);
      for (int64_t i = 0; i < oh; ++i) {
        const PoolTaps t = pool_taps(i, h, kh, sh, pads[0], pads[2], dh, count_include_pad);
        p.row_lo[i] = t.lo, p.row_hi[i] = t.hi, p.row_div[i] = float(t.count);
      }
      for (int64_t j = 0; j < ow; ++j)
        p.col_div[j] =
            float(pool_taps(j, w, kw, sw, pads[1], pads[3], dw, count_include_pad).count);
      ctx.pool.parallel_for(
          planes, plane_grain(out_plane * kh * kw), [&](int64_t begin, int64_t end) {
            thread_local std::vector<float> scratch;
            // The padding columns of every scratch row stay neutral; the vertical pass writes only
            // the input's columns.
            const int64_t rows = std::min(p.block_rows, (end - begin) * oh);
            scratch.assign(static_cast<size_t>(rows * p.ld),
                           kIsMax ? -std::numeric_limits<float>::infinity() : 0.f);
            if (sw == 1)
              pool_planes_dispatch<kIsMax, 1>(avx512, p, x, y, begin * oh, end * oh,
                                              scratch.data());
            else
              pool_planes_dispatch<kIsMax, 2>(avx512, p, x, y, begin * oh, end * oh,
                                              scratch.data());
          });
      return;
    }
  }
#endif

  // Per output column: the taps an average counts.
  std::vector<int64_t> col_count(ow);
  for (int64_t j = 0; j < ow; ++j)
    col_count[j] = pool_taps(j, w, kw, sw, pads[1], pads[3], dw, count_include_pad).count;
  // Per kernel column b: the output columns [lo, hi) whose tap b lands inside the input.
  std::vector<int64_t> tap_lo(kw), tap_hi(kw);
  for (int64_t b = 0; b < kw; ++b) {
    const int64_t offset = b * dw - pads[1];
    valid_range(offset, sw, w, ow, tap_lo[b], tap_hi[b]);
  }
  // max keeps NaN: once a NaN is seen it stays.
  auto combine = [](T acc, T v) LUMEN_VEC_INLINE {
    if constexpr (kIsMax)
      return v != v ? v : (v > acc ? v : acc);
    else
      return acc + v;
  };
  // `rows` is scratch for one input row's width.
  auto pool_row = [&](const T *xq, int64_t i, T *out, T *rows) LUMEN_VEC_INLINE {
    const int64_t row_offset = i * sh - pads[0];
    const PoolTaps a_taps = pool_taps(i, h, kh, sh, pads[0], pads[2], dh, count_include_pad);
    const int64_t a_lo = a_taps.lo, a_hi = a_taps.hi;
    const T init = kIsMax ? -std::numeric_limits<T>::infinity() : T(0);
    // Combine the window's rows first (contiguous, full vectors), then the columns: kw strided
    // passes over the output row instead of kh * kw.
    for (int64_t x = 0; x < w; ++x) rows[x] = init;
    for (int64_t a = a_lo; a < a_hi; ++a) {
      const T *row = xq + (row_offset + a * dh) * w;
      for (int64_t x = 0; x < w; ++x) rows[x] = combine(rows[x], row[x]);
    }
    for (int64_t j = 0; j < ow; ++j) out[j] = init;
    for (int64_t b = 0; b < kw; ++b) {
      const int64_t lo = tap_lo[b], hi = tap_hi[b];
      const T *src = rows + lo * sw + b * dw - pads[1];
      T *dst = out + lo;
      for (int64_t j = 0; j < hi - lo; ++j) dst[j] = combine(dst[j], src[j * sw]);
    }
    if constexpr (!kIsMax)
      for (int64_t j = 0; j < ow; ++j)
        out[j] = out[j] / static_cast<T>(a_taps.count * col_count[j]);
  };
  ctx.pool.parallel_for(planes, plane_grain(out_plane * kh * kw), [&](int64_t begin, int64_t end) {
    std::vector<T> rows(static_cast<size_t>(w));
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t q = begin; q < end; ++q)
        for (int64_t i = 0; i < oh; ++i)
          pool_row(x + q * in_plane, i, y + q * out_plane + i * ow, rows.data());
    });
  });
}

template <class T, bool kIsMax>
void global_pool(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const int64_t planes = tx.shape()[0] * tx.shape()[1];
  if (planes == 0) return;
  const int64_t size = tx.numel() / planes;
  const T *x = tx.data<T>();
  T *y = ctx.output(0).data<T>();
  ctx.pool.parallel_for(planes, plane_grain(size), [&](int64_t begin, int64_t end) {
#if LUMEN_VEC_X86
    if constexpr (std::is_same_v<T, float> && !kIsMax) {
      if (vec::cpu_isa() == vec::Isa::Avx512) return global_avg_avx512(x, y, size, begin, end);
      if (vec::cpu_isa() == vec::Isa::Avx2) return global_avg_avx2(x, y, size, begin, end);
    }
#endif
    for (int64_t q = begin; q < end; ++q) {
      const T *xq = x + q * size;
      if constexpr (kIsMax) {
        T best = -std::numeric_limits<T>::infinity();
        bool nan = false;
        for (int64_t i = 0; i < size; ++i) {
          best = xq[i] > best ? xq[i] : best;
          nan |= xq[i] != xq[i];
        }
        y[q] = nan ? std::numeric_limits<T>::quiet_NaN() : best;
      } else {
        double sum = 0;  // large planes: keep float32 sums accurate
        for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(xq[i]);
        y[q] = static_cast<T>(sum / static_cast<double>(size));
      }
    }
  });
}

LUMEN_REGISTER_KERNEL("cpu", "max_pool2d", (pool2d<float, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "max_pool2d", (pool2d<double, true>), DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "avg_pool2d", (pool2d<float, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "avg_pool2d", (pool2d<double, false>), DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "global_max_pool", (global_pool<float, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "global_max_pool", (global_pool<double, true>), DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "global_avg_pool", (global_pool<float, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "global_avg_pool", (global_pool<double, false>), DType::Float64);

}  // namespace
}  // namespace lumen
