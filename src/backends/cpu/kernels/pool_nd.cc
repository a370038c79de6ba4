// CPU pooling over any number of spatial dims (1-D and 3-D pools, dilated average pools, max
// pools of int8/uint8 or with an indices output, LpPool): the cases the 2-D kernels (pool.cc)
// leave out; and MaxUnpool. Per spatial dim, each output coordinate's taps inside the input form
// one range of tap indices, found once per call; the work is shared out by output rows (all spatial
// dims but the last) of every (n, c) plane, and each output element walks only its inside taps, so
// no tap is bounds-checked. The semantics are the reference's
// (backends/reference/kernels/conv_nd.cc): a max is the first inside tap's value unless a later one
// is greater (its index row-major, or column-major with storage_order = 1); an average divides by
// the inside taps, or with count_include_pad by the taps before the end padding's end (NaN when
// that is zero).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/kernel.h"

namespace lumen {
namespace {

enum class Kind { Max, Avg, Lp };

// Per spatial dim, per output coordinate: inside taps [lo, hi) and the taps counted with padding.
struct TapRanges {
  std::vector<int64_t> lo, hi, counted;
};

struct PoolGeometry {
  size_t k = 0;
  std::vector<int64_t> in, out, strides, pads, dilations;
  std::vector<TapRanges> taps;
};

PoolGeometry pool_geometry(const KernelContext &ctx, const Shape &x, const Shape &y) {
  PoolGeometry g;
  g.k = x.rank() - 2;
  const auto kernel = ctx.attrs.get_ints("kernel_shape", {});
  g.strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(g.k, 1));
  g.pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * g.k, 0));
  g.dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(g.k, 1));
  if (kernel.size() != g.k || g.strides.size() != g.k || g.pads.size() != 2 * g.k ||
      g.dilations.size() != g.k)
    ctx.fail("kernel_shape, strides, pads and dilations do not match ", g.k, " spatial dims");
  g.taps.resize(g.k);
  for (size_t d = 0; d < g.k; ++d) {
    const int64_t in = x[d + 2], out = y[d + 2], s = g.strides[d], dil = g.dilations[d];
    const int64_t begin = g.pads[d], end = g.pads[d + g.k];
    g.in.push_back(in);
    g.out.push_back(out);
    TapRanges &t = g.taps[d];
    for (int64_t o = 0; o < out; ++o) {
      int64_t lo = kernel[d], hi = 0, counted = 0;
      for (int64_t tap = 0; tap < kernel[d]; ++tap) {
        const int64_t pos = o * s - begin + tap * dil;
        if (pos >= in + end) break;  // beyond the end padding: neither read nor counted
        ++counted;
        if (pos < 0 || pos >= in) continue;
        lo = std::min(lo, tap);
        hi = tap + 1;
      }
      t.lo.push_back(std::min(lo, hi));
      t.hi.push_back(hi);
      t.counted.push_back(counted);
    }
  }
  return g;
}

template <class T, Kind K>
void pool_nd_typed(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  Tensor &ty = ctx.output(0);
  if (ty.numel() == 0) return;
  const PoolGeometry g = pool_geometry(ctx, tx.shape(), ty.shape());
  const size_t k = g.k;
  const bool include_pad = ctx.attrs.get_int("count_include_pad", 0) != 0;
  const double p = ctx.attrs.get_float("p", 2.0);
  const bool col_major = ctx.attrs.get_int("storage_order", 0) != 0;
  int64_t *indices = nullptr;
  if constexpr (K == Kind::Max)
    if (ctx.outputs.size() > 1 && ctx.outputs[1]) indices = ctx.output(1).data<int64_t>();
  // Row-major strides of the input's spatial dims; the strides indices are reported in.
  std::vector<int64_t> stride(k, 1), index_stride(k, 1);
  for (size_t d = k - 1; d-- > 0;) stride[d] = stride[d + 1] * g.in[d + 1];
  for (size_t d = 1; d < k; ++d) index_stride[d] = index_stride[d - 1] * g.in[d - 1];
  if (!col_major) index_stride = stride;
  int64_t in_size = 1;
  for (size_t d = 0; d < k; ++d) in_size *= g.in[d];
  const int64_t ow = g.out[k - 1], rows = ty.numel() / ow;
  const T *x = tx.data<T>();
  T *y = ty.data<T>();
  const TapRanges &last = g.taps[k - 1];
  const int64_t sw = g.strides[k - 1], dw = g.dilations[k - 1], pw = g.pads[k - 1];
  const int64_t work = std::max<int64_t>(1, ow * (last.hi.empty() ? 1 : last.hi[0] + 1));
  using A = std::conditional_t<K == Kind::Max, T, double>;
  const A init = [] {
    if constexpr (K != Kind::Max)
      return A(0);
    else if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }();
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 16384 / work), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> o(k), tap(k), best(static_cast<size_t>(ow));
    std::vector<A> acc(static_cast<size_t>(ow));
    for (int64_t row = r0; row < r1; ++row) {
      // The plane and the output coordinates of the leading spatial dims.
      int64_t rem = row;
      for (size_t d = k - 1; d-- > 0;) {
        o[d] = rem % g.out[d];
        rem /= g.out[d];
      }
      const int64_t plane = rem;
      int64_t lead_counted = 1, lead_real = 1;
      bool empty = false;
      for (size_t d = 0; d + 1 < k; ++d) {
        const TapRanges &t = g.taps[d];
        lead_counted *= t.counted[o[d]];
        lead_real *= t.hi[o[d]] - t.lo[o[d]];
        empty = empty || t.hi[o[d]] <= t.lo[o[d]];
        tap[d] = t.lo[o[d]];
      }
      std::fill(acc.begin(), acc.end(), init);
      std::fill(best.begin(), best.end(), int64_t{-1});
      const T *xp = x + plane * in_size;
      // Each combination of leading taps is one input row, combined into the whole output row
      // (for every output element, the taps in the reference's row-major order).
      while (!empty) {
        int64_t base = 0, index_base = 0;
        for (size_t d = 0; d + 1 < k; ++d) {
          const int64_t pos = o[d] * g.strides[d] - g.pads[d] + tap[d] * g.dilations[d];
          base += pos * stride[d];
          index_base += pos * index_stride[d];
        }
        const T *in = xp + base;
        const int64_t last_stride = index_stride[k - 1];
        for (int64_t j = 0; j < ow; ++j) {
          A a = acc[static_cast<size_t>(j)];
          int64_t b = best[static_cast<size_t>(j)];
          for (int64_t t = last.lo[static_cast<size_t>(j)], pos = j * sw - pw + t * dw;
               t < last.hi[static_cast<size_t>(j)]; ++t, pos += dw) {
            const T v = in[pos];
            if constexpr (K == Kind::Max) {
              // Selects, not a branch: which tap wins is data, and mispredicted half the time.
              const bool take = b < 0 || v > a;
              a = take ? v : a;
              b = take ? index_base + pos * last_stride : b;
            } else if constexpr (K == Kind::Avg) {
              a += double(v);
            } else {
              a += std::pow(std::abs(double(v)), p);
            }
          }
          acc[static_cast<size_t>(j)] = a;
          best[static_cast<size_t>(j)] = b;
        }
        size_t d = k - 1;  // advance the leading taps' odometer
        while (d-- > 0) {
          if (++tap[d] < g.taps[d].hi[o[d]]) break;
          tap[d] = g.taps[d].lo[o[d]];
        }
        if (d == static_cast<size_t>(-1)) break;
      }
      T *yp = y + row * ow;
      for (int64_t j = 0; j < ow; ++j) {
        const A a = acc[static_cast<size_t>(j)];
        if constexpr (K == Kind::Max) {
          yp[j] = a;
          const int64_t b = best[static_cast<size_t>(j)];
          if (indices) indices[row * ow + j] = b < 0 ? -1 : plane * in_size + b;
        } else if constexpr (K == Kind::Avg) {
          const int64_t div =
              include_pad
                  ? lead_counted * last.counted[static_cast<size_t>(j)]
                  : lead_real * (last.hi[static_cast<size_t>(j)] - last.lo[static_cast<size_t>(j)]);
          yp[j] = T(div > 0 ? a / double(div) : std::numeric_limits<double>::quiet_NaN());
        } else {
          yp[j] = T(std::pow(a, 1.0 / p));
        }
      }
    }
  });
}

template <Kind K>
void pool_nd(KernelContext &ctx) {
  if (ctx.input(0).rank() < 3)
    ctx.fail("input must have spatial dims, got ", ctx.input(0).shape().to_string());
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return pool_nd_typed<float, K>(ctx);
    case DType::Float64:
      return pool_nd_typed<double, K>(ctx);
    case DType::Int8:
      if constexpr (K == Kind::Max) return pool_nd_typed<int8_t, K>(ctx);
      break;
    case DType::UInt8:
      if constexpr (K == Kind::Max) return pool_nd_typed<uint8_t, K>(ctx);
      break;
    default:
      break;
  }
  ctx.fail("no cpu kernel for ", dtype_name(ctx.input(0).dtype()));
}

// MaxUnpool: each value of x written at its index into the default output block
// ((in - 1) * stride + kernel - pads per spatial dim), which sits at the origin of the output
// (zero elsewhere; the output may be larger). Indices are checked before anything is written.
template <class T>
void max_unpool_typed(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &ti = ctx.input(1);
  Tensor &ty = ctx.output(0);
  if (ti.shape() != tx.shape())
    ctx.fail("indices ", ti.shape().to_string(), " must have the input's shape ",
             tx.shape().to_string());
  const size_t k = tx.rank() - 2;
  const auto kernel = ctx.attrs.get_ints("kernel_shape", {});
  const auto strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(k, 1));
  const auto pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (kernel.size() != k || strides.size() != k || pads.size() != 2 * k)
    ctx.fail("kernel_shape, strides and pads do not match ", k, " spatial dims");
  std::vector<int64_t> block{tx.shape()[0], tx.shape()[1]};
  int64_t block_size = tx.shape()[0] * tx.shape()[1];
  for (size_t d = 0; d < k; ++d) {
    block.push_back((tx.shape()[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + k]);
    if (block.back() < 0)
      ctx.fail("the default output shape ", Shape(block).to_string(), " is negative");
    block_size = checked_mul(block_size, block.back());
  }
  const int64_t *idx = ti.data<int64_t>();
  for (int64_t i = 0; i < ti.numel(); ++i)
    if (idx[i] < 0 || idx[i] >= block_size)
      ctx.fail("index ", idx[i], " is out of range for the unpooled shape ",
               Shape(block).to_string());
  T *y = ty.data<T>();
  std::fill_n(y, ty.numel(), T(0));
  const T *x = tx.data<T>();
  const Shape &out = ty.shape();
  // A flat index of the block, re-laid in the output's (larger or equal) dims.
  const auto place = [&](int64_t flat) {
    int64_t at = 0, scale = 1;
    for (size_t d = block.size(); d-- > 0;) {
      const int64_t i = flat % block[d];
      flat /= block[d];
      if (i >= out[d]) return int64_t{-1};
      at += i * scale;
      scale *= out[d];
    }
    return at;
  };
  for (int64_t i = 0; i < tx.numel(); ++i)  // in order: a repeated index keeps the last value
    if (const int64_t at = place(idx[i]); at >= 0) y[at] = x[i];
}

void max_unpool(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return max_unpool_typed<double>(ctx);
  max_unpool_typed<float>(ctx);
}

LUMEN_REGISTER_KERNEL("cpu", "max_unpool", max_unpool, DType::Float32, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "max_pool_nd", pool_nd<Kind::Max>, DType::Float32, DType::Float64,
                      DType::Int8, DType::UInt8);
LUMEN_REGISTER_KERNEL("cpu", "avg_pool_nd", pool_nd<Kind::Avg>, DType::Float32, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "lp_pool", pool_nd<Kind::Lp>, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
