// The NCHW8c depthwise conv's output rows (f32_nchwc.h) with AVX-512: two outputs of a block's 8
// channels per 16-lane vector. At stride 1 the two outputs' windows are adjacent, so one load
// serves both; at other strides the two halves are loaded apart. Each tap's weights are broadcast
// to both halves. The driver (borders, padding, residual, clamp) is the AVX2 one's.
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX512F__)
#include "backends/cpu/ukernels/avx512_halves.h"
#include "core/cpu_isa.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = kNchwcBlock;

// kPairs * 2 consecutive outputs of one row (as the AVX2 kernel's outputs()); kKw: the kernel
// width when known at compile time (0: kw), so common kernels' taps unroll.
template <int kPairs, int kKw, bool kAdjacent>
inline void output_pairs(const float *in, int64_t step, int64_t kh, int64_t kw_runtime,
                         int64_t row_step, int64_t col_step, const float *wv, __m512 bias,
                         __m512 lo, __m512 hi, float *out) {
  const int64_t kw = kKw > 0 ? kKw : kw_runtime;
  __m512 acc[kPairs];
  for (int u = 0; u < kPairs; ++u) acc[u] = bias;
  for (int64_t a = 0; a < kh; ++a) {
    const float *row = in + a * row_step;
    const float *w = wv + a * kw * kLanes;
    for (int64_t b = 0; b < kw; ++b) {
      const __m512 k = both_halves(w + b * kLanes);
      const float *src = row + b * col_step;
      for (int u = 0; u < kPairs; ++u) {
        const float *at = src + 2 * u * step;
        const __m512 x = kAdjacent ? _mm512_loadu_ps(at) : load_halves(at, step);
        acc[u] = _mm512_fmadd_ps(k, x, acc[u]);
      }
    }
  }
  for (int u = 0; u < kPairs; ++u)
    _mm512_storeu_ps(out + 2 * u * kLanes, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[u])));
}

// The same at stride 1 and dilation 1 for a kernel kKw wide: the windows of consecutive pairs
// overlap, so each kernel row's pixels are loaded once, two per vector, and the odd taps read
// the vectors straddling two loads (one shuffle each) instead of loading them again across
// cache lines (3x3: 9 loads and 8 shuffles per 24 multiply-adds, against 24 loads, two thirds of
// them split; 40 chained 3x3 convs, 2 threads: 144 channels on 56x56 0.90x the time, 32 on
// 112x112 0.89x, 128 on 28x28 0.91x).
template <int kPairs, int kKw>
inline void output_pairs_stride1(const float *in, int64_t kh, int64_t row_step, const float *wv,
                                 __m512 bias, __m512 lo, __m512 hi, float *out) {
  constexpr int kLoads = kPairs + (kKw - 1) / 2;  // vectors of two pixels a kernel row reads
  __m512 acc[kPairs];
  for (int u = 0; u < kPairs; ++u) acc[u] = bias;
  for (int64_t a = 0; a < kh; ++a) {
    const float *row = in + a * row_step;
    const float *w = wv + a * kKw * kLanes;
    __m512 v[kLoads], straddle[kLoads - 1];
    for (int m = 0; m < kLoads; ++m) v[m] = _mm512_loadu_ps(row + 2 * m * kLanes);
    // Pixels 2m + 1 and 2m + 2: v[m]'s high half, v[m + 1]'s low half.
    for (int m = 0; m + 1 < kLoads; ++m) straddle[m] = _mm512_shuffle_f32x4(v[m], v[m + 1], 0x4E);
    for (int b = 0; b < kKw; ++b) {
      const __m512 k = both_halves(w + b * kLanes);
      for (int u = 0; u < kPairs; ++u)
        acc[u] = _mm512_fmadd_ps(k, b % 2 == 0 ? v[u + b / 2] : straddle[u + b / 2], acc[u]);
    }
  }
  for (int u = 0; u < kPairs; ++u)
    _mm512_storeu_ps(out + 2 * u * kLanes, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[u])));
}

// One output: the AVX2 width.
template <int kKw>
inline void output_one(const float *in, int64_t kh, int64_t kw_runtime, int64_t row_step,
                       int64_t col_step, const float *wv, __m256 bias, __m256 lo, __m256 hi,
                       float *out) {
  const int64_t kw = kKw > 0 ? kKw : kw_runtime;
  __m256 acc = bias;
  for (int64_t a = 0; a < kh; ++a)
    for (int64_t b = 0; b < kw; ++b)
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(wv + (a * kw + b) * kLanes),
                            _mm256_loadu_ps(in + a * row_step + b * col_step), acc);
  _mm256_storeu_ps(out, _mm256_min_ps(hi, _mm256_max_ps(lo, acc)));
}

// One output row: 16, 8, 4, 2 and 1 outputs at a time.
template <int kKw, bool kAdjacent>
void output_row(const float *in, int64_t ow, int64_t step, int64_t kh, int64_t kw, int64_t row_step,
                int64_t col_step, const float *wv, const float *bias8, float lo, float hi,
                float *out) {
  const __m512 bias = both_halves(bias8), lo16 = _mm512_set1_ps(lo), hi16 = _mm512_set1_ps(hi);
  int64_t j = 0;
  // Stride 1 and dilation 1 with a known kernel width: shared loads.
  const bool shared = kAdjacent && kKw > 0 && col_step == kLanes;
  const auto pairs = [&]<int P>() LUMEN_VEC_INLINE {
    if constexpr (kAdjacent && kKw > 0) {
      if (shared) {
        output_pairs_stride1<P, kKw>(in + j * step, kh, row_step, wv, bias, lo16, hi16,
                                     out + j * kLanes);
        j += 2 * P;
        return;
      }
    }
    output_pairs<P, kKw, kAdjacent>(in + j * step, step, kh, kw, row_step, col_step, wv, bias, lo16,
                                    hi16, out + j * kLanes);
    j += 2 * P;
  };
  while (j + 16 <= ow) pairs.template operator()<8>();
  if (j + 8 <= ow) pairs.template operator()<4>();
  if (j + 4 <= ow) pairs.template operator()<2>();
  if (j + 2 <= ow) pairs.template operator()<1>();
  if (j < ow)
    output_one<kKw>(in + j * step, kh, kw, row_step, col_step, wv, _mm512_castps512_ps256(bias),
                    _mm512_castps512_ps256(lo16), _mm512_castps512_ps256(hi16), out + j * kLanes);
}

template <bool kAdjacent>
NchwcDepthwiseRow row_for(int64_t kw) {
  return kw == 3   ? output_row<3, kAdjacent>
         : kw == 5 ? output_row<5, kAdjacent>
         : kw == 7 ? output_row<7, kAdjacent>
                   : output_row<0, kAdjacent>;
}

}  // namespace

NchwcDepthwiseRow f32_nchwc_depthwise_row__avx512(int64_t kw, int64_t sw) {
  return sw == 1 ? row_for<true>(kw) : row_for<false>(kw);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
