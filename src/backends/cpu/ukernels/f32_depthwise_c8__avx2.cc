// The channels-in-lanes depthwise conv (f32_depthwise.h) for AVX2, any kernel size, strides and
// dilations: 8 channels per vector, 8x8 transposes in and out. Each weight vector loaded serves
// several outputs of a row (up to 8 accumulators in registers), so the taps cost about one load
// per multiply-add. The clamp (relu, relu6) is applied in registers. No masked stores (microcoded
// on AMD): a plane's last positions are stored 4, 2 and 1 at a time.
#include "backends/cpu/ukernels/f32_depthwise.h"
#include "backends/cpu/ukernels/f32_nchwc.h"

// Built with this ISA's flags on x86-64 only; elsewhere the caller never runs it (CPU check).
#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/ukernels/avx2_vectors.h"
#include "core/cpu_isa.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = 8;

// kOutputs consecutive outputs of one row: `in` points at the first one's window in the strip,
// `step` is the floats between two outputs' windows, row_step and col_step the floats between
// kernel rows and columns; each output clamped to [lo, hi] (NaN stays NaN). kKw is the kernel
// width when known at compile time (0: kw), so that common kernels' taps are unrolled.
template <int kOutputs, int kKw>
inline void outputs(const float *in, int64_t step, int64_t kh, int64_t kw_runtime, int64_t row_step,
                    int64_t col_step, const float *wv, __m256 bias, __m256 lo, __m256 hi,
                    float *out) {
  const int64_t kw = kKw > 0 ? kKw : kw_runtime;
  __m256 acc[kOutputs];
  for (int u = 0; u < kOutputs; ++u) acc[u] = bias;
  for (int64_t a = 0; a < kh; ++a) {
    const float *row = in + a * row_step;
    const float *w = wv + a * kw * kLanes;
    for (int64_t b = 0; b < kw; ++b) {
      const __m256 k = _mm256_load_ps(w + b * kLanes);
      const float *src = row + b * col_step;
      for (int u = 0; u < kOutputs; ++u)
        acc[u] = _mm256_fmadd_ps(k, _mm256_load_ps(src + u * step), acc[u]);
    }
  }
  for (int u = 0; u < kOutputs; ++u)
    _mm256_store_ps(out + u * kLanes, _mm256_min_ps(hi, _mm256_max_ps(lo, acc[u])));
}

// One output row, 8, 4, 2 or 1 outputs at a time.
template <int kKw>
void output_row(const float *in, int64_t ow, int64_t step, int64_t kh, int64_t kw, int64_t row_step,
                int64_t col_step, const float *wv, __m256 bias, __m256 lo, __m256 hi, float *out) {
  int64_t j = 0;
  const auto some = [&]<int N>() LUMEN_VEC_INLINE {
    outputs<N, kKw>(in + j * step, step, kh, kw, row_step, col_step, wv, bias, lo, hi,
                    out + j * kLanes);
    j += N;
  };
  while (j + 8 <= ow) some.template operator()<8>();
  if (j + 4 <= ow) some.template operator()<4>();
  if (j + 2 <= ow) some.template operator()<2>();
  if (j < ow) some.template operator()<1>();
}

// Zeros the parts of padded strip row `trow` (cols positions) that no input reaches: all of it for
// input row ir outside the plane, else the columns outside [c0, c1). False for an outside row.
inline bool zero_padding(const DepthwiseChannels &d, int64_t ir, float *trow, int64_t cols,
                         int64_t c0, int64_t c1) {
  const __m256 zero = _mm256_setzero_ps();
  const bool inside = ir >= 0 && ir < d.h;
  for (int64_t c = 0; c < (inside ? c0 : cols); ++c) _mm256_store_ps(trow + c * kLanes, zero);
  for (int64_t c = inside ? c1 : cols; c < cols; ++c) _mm256_store_ps(trow + c * kLanes, zero);
  return inside;
}

// output_row for kernels kw wide: 3, 5 and 7 unrolled.
auto output_row_for(int64_t kw) {
  return kw == 3   ? output_row<3>
         : kw == 5 ? output_row<5>
         : kw == 7 ? output_row<7>
                   : output_row<0>;
}

}  // namespace

void f32_depthwise_c8__avx2(const DepthwiseChannels &d, float *scratch) {
  const int64_t cols = d.padded_cols(), taps = d.kh * d.kw;
  const int64_t in_plane = d.h * d.w, out_plane = d.oh * d.ow;
  const int64_t strip = f32_depthwise_strip(d, kLanes);
  const __m256 zero = _mm256_setzero_ps();

  // The weights as one vector per tap, lane l holding channel l's.
  float *wv = scratch;
  for (int l = 0; l < kLanes; ++l)
    for (int64_t k = 0; k < taps; ++k)
      wv[k * kLanes + l] = l < d.channels ? d.weights[l * taps + k] : 0.0f;
  const __m256 bias = d.bias ? _mm256_maskload_ps(d.bias, first_lanes8(d.channels)) : zero;
  const __m256 lo = _mm256_set1_ps(d.lo), hi = _mm256_set1_ps(d.hi);

  float *t = scratch + taps * kLanes;  // [rows][cols][8]: padded input rows of the strip
  const int64_t step = d.sw * kLanes, row_step = d.dh * cols * kLanes, col_step = d.dw * kLanes;
  for (int64_t i0 = 0; i0 < d.oh; i0 += strip) {
    const int64_t i1 = std::min(d.oh, i0 + strip);
    const int64_t r0 = i0 * d.sh, rows = d.padded_rows(i1 - i0);
    float *o = t + rows * cols * kLanes;  // [(i1 - i0) * ow][8]
    // Transpose the strip's input rows in: 8 columns of 8 channels at a time.
    for (int64_t r = 0; r < rows; ++r) {
      float *trow = t + r * cols * kLanes;
      const int64_t ir = r0 + r - d.pt;
      const int64_t c0 = std::min(cols, d.pl), c1 = std::min(cols, d.pl + d.w);
      if (!zero_padding(d, ir, trow, cols, c0, c1)) continue;
      const float *xrow = d.x + ir * d.w;
      for (int64_t ic = 0; ic < c1 - c0; ic += kLanes) {
        const bool full = c1 - c0 - ic >= kLanes;
        const __m256i m = first_lanes8(c1 - c0 - ic);
        __m256 v[8];
        for (int l = 0; l < kLanes; ++l) {
          const float *src = xrow + l * in_plane + ic;
          v[l] = l >= d.channels ? zero : full ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m);
        }
        transpose8x8(v);
        // Whole blocks with a fixed count: a loop to n became a `rep movsq` copy of v, most of
        // the kernel's time on 14x14 planes.
        float *dst = trow + (c0 + ic) * kLanes;
        if (full)
          for (int k = 0; k < kLanes; ++k) _mm256_store_ps(dst + k * kLanes, v[k]);
        else
          for (int k = 0; k < kLanes; ++k)
            if (k < c1 - c0 - ic) _mm256_store_ps(dst + k * kLanes, v[k]);
      }
    }
    // The taps, row by row.
    const auto row = output_row_for(d.kw);
    for (int64_t i = i0; i < i1; ++i)
      row(t + (i - i0) * d.sh * cols * kLanes, d.ow, step, d.kh, d.kw, row_step, col_step, wv, bias,
          lo, hi, o + (i - i0) * d.ow * kLanes);
    store_lanes_to_planes(o, (i1 - i0) * d.ow, d.y + i0 * d.ow, out_plane, d.channels, lo, hi);
  }
}

// The same taps for a block of the NCHW8c layout, whose input rows are already [w][8]: an output
// row whose taps all fall inside the input reads it in place, its inside columns through the row
// kernel; the few border columns, whose taps fall partly outside, through the same kernel on a
// zero-padded copy of the input they read (kh rows of a few pixels: summed tap by tap with bounds
// checks, two border columns were half the time of a 28-wide row). Rows near the top and bottom
// edges are copied into a zero-padded strip first (onnxruntime copies none; the copy of every row
// was ~20% of MNASNet's depthwise time). The clamp is applied in registers unless there is a
// residual to add first.
void f32_nchwc_depthwise__avx2(const DepthwiseChannels &d, const float *wv, const float *residual,
                               int64_t row_begin, int64_t row_end, float *scratch,
                               NchwcDepthwiseRow wide_row) {
  const int64_t cols = d.padded_cols();
  const __m256 zero = _mm256_setzero_ps();
  const __m256 bias = d.bias ? _mm256_loadu_ps(d.bias) : zero;
  const __m256 lo = _mm256_set1_ps(d.lo), hi = _mm256_set1_ps(d.hi);
  // The clamp in the row kernels: none where a residual is added after them.
  const float row_lo = residual ? -__builtin_inff() : d.lo,
              row_hi = residual ? __builtin_inff() : d.hi;
  const __m256 row_lo8 = _mm256_set1_ps(row_lo), row_hi8 = _mm256_set1_ps(row_hi);
  const int64_t step = d.sw * kLanes, col_step = d.dw * kLanes;
  const int64_t c0 = std::min(cols, d.pl), c1 = std::min(cols, d.pl + d.w);
  const auto narrow_row = output_row_for(d.kw);
  alignas(32) static constexpr float kZeros[kLanes] = {};
  const auto row = [&](const float *in, int64_t ow, int64_t row_step, float *out) {
    if (wide_row)
      wide_row(in, ow, step, d.kh, d.kw, row_step, col_step, wv, d.bias ? d.bias : kZeros, row_lo,
               row_hi, out);
    else
      narrow_row(in, ow, step, d.kh, d.kw, row_step, col_step, wv, bias, row_lo8, row_hi8, out);
  };
  // Output columns [j0, j1) whose taps all lie inside an input row.
  const int64_t span = (d.kw - 1) * d.dw;
  const int64_t j0 = std::min(d.ow, (d.pl + d.sw - 1) / d.sw);
  const int64_t j1 =
      d.w - 1 - span + d.pl < 0 ? 0 : std::clamp((d.w - 1 - span + d.pl) / d.sw + 1, j0, d.ow);
  // Input rows [top, top + count) zero-padded into scratch, `cols` vectors each.
  const auto copy_rows = [&](int64_t top, int64_t count) {
    for (int64_t r = 0; r < count; ++r) {
      float *trow = scratch + r * cols * kLanes;
      const int64_t ir = top + r;
      if (!zero_padding(d, ir, trow, cols, c0, c1)) continue;
      const float *xrow = d.x + (ir * d.w + c0 - d.pl) * kLanes;
      for (int64_t c = c0; c < c1; ++c)
        _mm256_store_ps(trow + c * kLanes, _mm256_loadu_ps(xrow + (c - c0) * kLanes));
    }
  };
  const auto finish_row = [&](int64_t i) {
    if (!residual) return;  // clamped in the row kernel
    float *out = d.y + i * d.ow * kLanes;
    const float *res = residual + i * d.ow * kLanes;
    for (int64_t j = 0; j < d.ow * kLanes; j += kLanes) {
      const __m256 v = _mm256_add_ps(_mm256_load_ps(out + j), _mm256_loadu_ps(res + j));
      _mm256_store_ps(out + j, _mm256_min_ps(hi, _mm256_max_ps(lo, v)));
    }
  };
  // Where the border columns' taps outweigh copying the rows (twice their taps against a row's
  // padded columns: 3x3 on maps up to 28 wide, 5x5 up to 100), the band's input rows are copied
  // zero-padded once, and every output row reads the copy (1 thread, 40 chained 3x3 convs: 576
  // channels on 14x14 0.82x the time, 128 on 28x28 0.86x; copied, 56x56 and 112x112 took
  // 1.18x and 1.26x).
  const int64_t band_rows = d.padded_rows(row_end - row_begin);
  if ((d.ow - (j1 - j0)) * d.kh * d.kw * 2 >= cols &&
      band_rows <= d.padded_rows(f32_depthwise_strip(d, kLanes))) {
    copy_rows(row_begin * d.sh - d.pt, band_rows);
    for (int64_t i = row_begin; i < row_end; ++i) {
      row(scratch + (i - row_begin) * d.sh * cols * kLanes, d.ow, d.dh * cols * kLanes,
          d.y + i * d.ow * kLanes);
      finish_row(i);
    }
    return;
  }
  for (int64_t i = row_begin; i < row_end; ++i) {
    float *out = d.y + i * d.ow * kLanes;
    const int64_t top = i * d.sh - d.pt;
    if (top >= 0 && top + (d.kh - 1) * d.dh < d.h && j0 < j1) {
      row(d.x + (top * d.w + j0 * d.sw - d.pl) * kLanes, j1 - j0, d.dh * d.w * kLanes,
          out + j0 * kLanes);
      // Border outputs [ja, jb): the padded columns their windows read, from the first's, as kh
      // rows of `width` pixels in scratch.
      const auto border = [&](int64_t ja, int64_t jb) {
        if (ja >= jb) return;
        const int64_t first = ja * d.sw - d.pl, width = (jb - 1 - ja) * d.sw + span + 1;
        for (int64_t a = 0; a < d.kh; ++a) {
          const float *xrow = d.x + (top + a * d.dh) * d.w * kLanes;
          float *prow = scratch + a * width * kLanes;
          for (int64_t c = 0; c < width; ++c) {
            const int64_t ic = first + c;
            _mm256_store_ps(prow + c * kLanes,
                            ic >= 0 && ic < d.w ? _mm256_load_ps(xrow + ic * kLanes) : zero);
          }
        }
        row(scratch, jb - ja, width * kLanes, out + ja * kLanes);
      };
      border(0, j0);
      border(j1, d.ow);
    } else {  // the rows this output row reads, zero-padded, as a one-row strip
      copy_rows(top, d.padded_rows(1));
      row(scratch, d.ow, d.dh * cols * kLanes, out);
    }
    finish_row(i);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
