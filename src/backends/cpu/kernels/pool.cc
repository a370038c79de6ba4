// CPU pooling: planes (n, c) split over the pool; each window's valid rows and columns are found
// once, so the inner loops have no bounds checks. Same semantics as the reference kernels (max
// propagates NaN; an empty average is NaN, an empty max -inf).
#include <algorithm>
#include <limits>
#include <vector>

#include "core/kernel.h"

namespace lumen {
namespace {

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Window taps t in [lo, hi) (t < taps) whose input index offset + t * step lies in [0, size).
inline void valid_taps(int64_t offset, int64_t step, int64_t size, int64_t taps, int64_t &lo,
                       int64_t &hi) {
  lo = offset >= 0 ? 0 : ceil_div(-offset, step);
  hi = size - offset <= 0 ? 0 : ceil_div(size - offset, step);
  lo = std::min(lo, taps);
  hi = std::clamp(hi, lo, taps);
}

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
    valid_taps(offset, dw, w, kw, col_lo[j], col_hi[j]);
    col_padded[j] = std::clamp<int64_t>(w + pads[3] - offset, 0, kw);
  }
  ctx.pool.parallel_for(planes, plane_grain(out_plane * kh * kw), [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const T *xq = x + q * in_plane;
      T *yq = y + q * out_plane;
      for (int64_t i = 0; i < oh; ++i) {
        const int64_t row_offset = i * sh - pads[0];
        int64_t a_lo, a_hi;
        valid_taps(row_offset, dh, h, kh, a_lo, a_hi);
        const int64_t rows_padded = std::clamp<int64_t>(h + pads[2] - row_offset, 0, kh);
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t col0 = j * sw - pads[1];
          T out;
          if constexpr (kIsMax) {
            // Branch-free: a select for the max and a flag for NaN (which must propagate).
            T best = -std::numeric_limits<T>::infinity();
            bool nan = false;
            for (int64_t a = a_lo; a < a_hi; ++a) {
              const T *row = xq + (row_offset + a * dh) * w;
              for (int64_t b = col_lo[j]; b < col_hi[j]; ++b) {
                const T v = row[col0 + b * dw];
                best = v > best ? v : best;
                nan |= v != v;
              }
            }
            out = nan ? std::numeric_limits<T>::quiet_NaN() : best;
          } else {
            T sum = 0;
            for (int64_t a = a_lo; a < a_hi; ++a) {
              const T *row = xq + (row_offset + a * dh) * w;
              for (int64_t b = col_lo[j]; b < col_hi[j]; ++b) sum += row[col0 + b * dw];
            }
            const int64_t count = count_include_pad ? rows_padded * col_padded[j]
                                                    : (a_hi - a_lo) * (col_hi[j] - col_lo[j]);
            out = sum / static_cast<T>(count);
          }
          yq[i * ow + j] = out;
        }
      }
    }
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
