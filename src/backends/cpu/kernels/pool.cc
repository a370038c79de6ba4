// CPU pooling: planes (n, c) split over the pool. Each output row combines its window's input
// rows into one row first, then that row's columns tap by tap over the whole output row (valid
// column ranges found once per call, so the inner loops have no bounds checks and vectorize,
// compiled for the best ISA at run time). Same semantics as the reference
// kernels (max propagates NaN; an empty average is NaN, an empty max -inf).
#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/conv_params.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Grain for parallel_for over planes: about 64K elements of work per chunk.
inline int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work_per_plane));
}

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

  // Per output column: valid taps and (for count_include_pad) taps inside the padded width.
  std::vector<int64_t> col_lo(ow), col_hi(ow), col_padded(ow);
  for (int64_t j = 0; j < ow; ++j) {
    const int64_t offset = j * sw - pads[1];
    valid_range(offset, dw, w, kw, col_lo[j], col_hi[j]);
    col_padded[j] = std::clamp<int64_t>(w + pads[3] - offset, 0, kw);
  }
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
    int64_t a_lo, a_hi;
    valid_range(row_offset, dh, h, kh, a_lo, a_hi);
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
    if constexpr (!kIsMax) {
      const int64_t rows_padded = std::clamp<int64_t>(h + pads[2] - row_offset, 0, kh);
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t count = count_include_pad ? rows_padded * col_padded[j]
                                                : (a_hi - a_lo) * (col_hi[j] - col_lo[j]);
        out[j] = out[j] / static_cast<T>(count);
      }
    }
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
