// CPU gather_elements, gather_nd, scatter_elements, scatter_nd, non_zero, compress and
// tensor_scatter (a KV cache's update), and unique (the kernel both backends share,
// backends/common/unique_kernel.h), for any dtype (data moves as bytes; scatter_nd's
// reductions are typed). Every index is checked against its dim
// (negative ones count from the end) before anything is copied; the copies are shared out over the
// pool, except scatter_nd's, whose later updates must win over earlier ones at the same place.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/dtype_lists.h"
#include "backends/common/nd_index_geometry.h"
#include "backends/common/unique_kernel.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 14;

// The indices as int64, each resolved into [0, dim(i)) or a failure naming it.
template <class DimOf>
std::vector<int64_t> resolved_indices(const KernelContext &ctx, const Tensor &idx, DimOf dim_of) {
  std::vector<int64_t> out(static_cast<size_t>(idx.numel()));
  auto resolve = [&](const auto *values) {
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const auto v = static_cast<int64_t>(values[i]);
      const auto [n, dim] = dim_of(i);
      if (v < -n || v >= n) ctx.fail("index ", v, " is out of range for dim ", dim, " of size ", n);
      out[static_cast<size_t>(i)] = v < 0 ? v + n : v;
    }
  };
  if (idx.dtype() == DType::Int64)
    resolve(idx.data<int64_t>());
  else if (idx.dtype() == DType::Int32)
    resolve(idx.data<int32_t>());
  else
    ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype()));
  return out;
}

size_t kernel_axis(const KernelContext &ctx, int64_t axis, const Shape &shape) {
  const auto r = static_cast<int64_t>(shape.rank());
  if (axis < -r || axis >= r)
    ctx.fail("axis ", axis, " is out of range for input ", shape.to_string());
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// gather_elements / scatter_elements: the attribute's axis and every index resolved along it,
// after checking that indices fit data on the other dims.
struct AxisIndices {
  size_t axis;
  std::vector<int64_t> values;
};
AxisIndices axis_indices(const KernelContext &ctx, const Tensor &data, const Tensor &idx) {
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", 0), data.shape());
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != axis && idx.shape()[d] > data.shape()[d])
      ctx.fail("indices ", idx.shape().to_string(), " exceed data ", data.shape().to_string(),
               " on dim ", d);
  const int64_t n = data.shape()[axis];
  return {axis, resolved_indices(ctx, idx, [&](int64_t) {
            return std::pair<int64_t, size_t>{n, axis};
          })};
}

// gather_elements / scatter_elements walk indices by rows of its innermost dim: the data offset
// (`stride`: data's) of row `r`'s first element, without the axis coordinate.
int64_t row_offset(int64_t r, const Shape &indices, const std::vector<int64_t> &stride,
                   size_t axis) {
  int64_t base = 0;
  for (size_t d = indices.rank() - 1; d-- > 0;) {
    if (d != axis) base += (r % indices[d]) * stride[d];
    r /= indices[d];
  }
  return base;
}

// y[i] = data[i with its axis coordinate replaced by indices[i]]; indices has y's shape. Walked
// by rows of the innermost dim.
void gather_elements(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const size_t rank = data.rank();
  if (rank == 0 || rank != idx.rank() || y.shape() != idx.shape())
    ctx.fail("data ", data.shape().to_string(), ", indices ", idx.shape().to_string(),
             " and output ", y.shape().to_string(), " do not fit");
  const AxisIndices resolved = axis_indices(ctx, data, idx);
  const size_t axis = resolved.axis;
  const std::vector<int64_t> &k = resolved.values;  // (no structured binding: lambdas use it)
  const size_t elem = dtype_size(data.dtype());
  const std::vector<int64_t> stride = contiguous_strides(data.shape());
  const int64_t inner = idx.shape()[rank - 1], rows = inner ? idx.numel() / inner : 0;
  const int64_t inner_stride = axis == rank - 1 ? 0 : 1;  // the last dim's own step
  const auto *src = static_cast<const char *>(data.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner));
  ctx.pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = row_offset(r, idx.shape(), stride, axis);
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t i = r * inner + j;
        const int64_t off = base + j * inner_stride + k[size_t(i)] * stride[axis];
        std::memcpy(dst + size_t(i) * elem, src + size_t(off) * elem, elem);
      }
    }
  });
}

// Offsets (in slices) into data of every index tuple of gather_nd / scatter_nd.
std::vector<int64_t> tuple_offsets(const KernelContext &ctx, const Tensor &idx, const Shape &data,
                                   size_t first_dim, size_t m) {
  const std::vector<int64_t> v = resolved_indices(ctx, idx, [&](int64_t i) {
    const size_t d = first_dim + size_t(i % int64_t(m));
    return std::pair<int64_t, size_t>{data[d], d};
  });
  std::vector<int64_t> offsets(v.size() / m);
  for (size_t j = 0; j < offsets.size(); ++j) {
    int64_t off = 0;
    for (size_t t = 0; t < m; ++t) off = off * data[first_dim + t] + v[j * m + t];
    offsets[j] = off;
  }
  return offsets;
}

void gather_nd(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const GatherNdGeometry g = gather_nd_geometry(ctx);
  const int64_t per_batch = g.per_batch;
  const size_t slice = g.slice, data_batch = g.data_batch;
  const std::vector<int64_t> offsets = tuple_offsets(ctx, idx, data.shape(), g.b, g.m);
  const auto *src = static_cast<const char *>(data.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  ctx.pool.parallel_for(
      g.batches * per_batch, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, int64_t(slice))),
      [&](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j)
          std::memcpy(dst + size_t(j) * slice,
                      src + size_t(j / per_batch) * data_batch + size_t(offsets[size_t(j)]) * slice,
                      slice);
      });
}

template <class T>
T combine(T a, T b, const std::string &red) {
  if (red == "add") return T(a + b);
  if (red == "mul") return T(a * b);
  if (red == "max") return std::max(a, b);
  return std::min(a, b);
}

// y = data, then update j (a slice of `slice` elements of `upd`) goes to slice offsets[j] of y,
// replacing it (reduction "none") or combined with it, in order, so that later updates win.
void scatter_slices(const KernelContext &ctx, const Tensor &data, const Tensor &upd, Tensor &y,
                    const std::vector<int64_t> &offsets, int64_t slice) {
  const std::string red = ctx.attrs.get_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    ctx.fail("unknown reduction '", red, "'");
  std::memcpy(y.raw_data(), data.raw_data(), data.nbytes());
  if (red == "none") {
    const size_t bytes = size_t(slice) * dtype_size(data.dtype());
    auto *dst = static_cast<char *>(y.raw_data());
    const auto *src = static_cast<const char *>(upd.raw_data());
    // Element-sized slices (scatter_elements) copy with a store of that size, not a call each.
    auto copy_all = [&]<size_t kBytes>() {
      for (size_t j = 0; j < offsets.size(); ++j)
        std::memcpy(dst + size_t(offsets[j]) * kBytes, src + j * kBytes, kBytes);
    };
    if (bytes == 4)
      copy_all.template operator()<4>();
    else if (bytes == 8)
      copy_all.template operator()<8>();
    else
      for (size_t j = 0; j < offsets.size(); ++j)
        std::memcpy(dst + size_t(offsets[j]) * bytes, src + j * bytes, bytes);
    return;
  }
  bool typed = false;
  bin::visit_dtype(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      T *py = y.data<T>();
      const T *pu = upd.data<T>();
      for (size_t j = 0; j < offsets.size(); ++j)
        for (int64_t e = 0; e < slice; ++e) {
          T &out = py[offsets[j] * slice + e];
          out = combine(out, pu[int64_t(j) * slice + e], red);
        }
      typed = true;
    }
  });
  if (!typed) ctx.fail("reduction '", red, "' is not supported for ", dtype_name(data.dtype()));
}

void scatter_nd(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  const ScatterNdGeometry g = scatter_nd_geometry(ctx);
  scatter_slices(ctx, data, upd, ctx.output(0), tuple_offsets(ctx, idx, data.shape(), 0, g.k),
                 g.slice);
}

// y = data, then y[i with its axis coordinate replaced by indices[i]] = updates[i] (or combined
// with it by the reduction), in index order so that later updates win.
void scatter_elements(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  Tensor &y = ctx.output(0);
  const size_t rank = data.rank();
  if (rank == 0 || idx.rank() != rank || upd.shape() != idx.shape() || y.shape() != data.shape() ||
      upd.dtype() != data.dtype())
    ctx.fail("data ", data.shape().to_string(), ", indices ", idx.shape().to_string(),
             " and updates ", upd.shape().to_string(), " do not fit");
  const AxisIndices resolved = axis_indices(ctx, data, idx);
  const size_t axis = resolved.axis;
  const std::vector<int64_t> &k = resolved.values;  // (no structured binding: lambdas use it)
  const std::vector<int64_t> stride = contiguous_strides(data.shape());
  // The data offset of every update, in order, a row of the innermost dim at a time.
  std::vector<int64_t> offsets(k.size());
  const int64_t inner = idx.shape()[rank - 1], rows = inner ? idx.numel() / inner : 0;
  const int64_t inner_stride = axis == rank - 1 ? 0 : 1;  // the last dim's own step
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = row_offset(r, idx.shape(), stride, axis);
    for (int64_t j = 0, i = r * inner; j < inner; ++j, ++i)
      offsets[size_t(i)] = base + j * inner_stride + k[size_t(i)] * stride[axis];
  }
  scatter_slices(ctx, data, upd, y, offsets, 1);
}

// [rank, count] int64: the coordinates of every non-zero element, in row-major order.
void non_zero(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  std::vector<int64_t> hits;
  const bool typed = bin::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      if (bin::load(px[i]) != decltype(bin::load(px[i]))(0)) hits.push_back(i);
  });
  if (!typed) ctx.fail("unsupported dtype ", dtype_name(x.dtype()));
  const auto rank = static_cast<int64_t>(x.rank()), count = static_cast<int64_t>(hits.size());
  if (y.shape() != Shape{rank, count})
    ctx.fail("output ", y.shape().to_string(), " should be [", rank, ", ", count, "]");
  int64_t *py = y.data<int64_t>();
  for (int64_t c = 0; c < count; ++c) {
    int64_t rem = hits[size_t(c)];
    for (int64_t d = rank; d-- > 0;) {
      py[d * count + c] = rem % x.shape()[size_t(d)];
      rem /= x.shape()[size_t(d)];
    }
  }
}

// The slices along `axis` (or elements of the flattened input) where the condition is true.
void compress(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &cond = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (cond.dtype() != DType::Bool) ctx.fail("condition must be bool");
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (ctx.attrs.has("axis")) {
    const size_t axis = x.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
    n = x.shape()[axis];
    for (size_t d = 0; d < axis; ++d) outer *= x.shape()[d];
    for (size_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  }
  if (cond.numel() > n)
    ctx.fail("condition of ", cond.numel(), " values is longer than the ", n, " it selects from");
  std::vector<int64_t> selected;
  for (int64_t j = 0; j < cond.numel(); ++j)
    if (cond.data<bool>()[j]) selected.push_back(j);
  const auto count = static_cast<int64_t>(selected.size());
  const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  if (static_cast<size_t>(outer * count) * block != y.nbytes())
    ctx.fail("output ", y.shape().to_string(), " does not match ", count,
             " selected slices of input ", x.shape().to_string());
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  ctx.pool.parallel_for(
      outer * count, std::max<int64_t>(1, kGrain / std::max<size_t>(1, block)),
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          std::memcpy(dst + static_cast<size_t>(i) * block,
                      src + static_cast<size_t>((i / count) * n + selected[i % count]) * block,
                      block);
      });
}

// tensor_scatter: the cache with `update` written at write_indices[b] + i along the axis (modulo
// the axis length in circular mode); positions are checked before anything is copied.
void tensor_scatter(KernelContext &ctx) {
  const Tensor &cache = ctx.input(0), &upd = ctx.input(1);
  Tensor &y = ctx.output(0);
  const Shape &cs = cache.shape();
  const size_t axis = cs.normalize_axis(ctx.attrs.get_int("axis", -2));
  const bool circular = ctx.attrs.get_string("mode", "linear") == "circular";
  if (axis == 0 || upd.rank() != cache.rank() || y.shape() != cs || upd.dtype() != cache.dtype())
    ctx.fail("cache ", cs.to_string(), " and update ", upd.shape().to_string(), " do not fit");
  for (size_t d = 0; d < cache.rank(); ++d)
    if (d == axis ? upd.shape()[d] > cs[d] : upd.shape()[d] != cs[d])
      ctx.fail("update ", upd.shape().to_string(), " does not fit cache ", cs.to_string());
  int64_t outer = 1, per_batch = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= cs[d];
  for (size_t d = 1; d < axis; ++d) per_batch *= cs[d];
  for (size_t d = axis + 1; d < cs.rank(); ++d) inner *= cs[d];
  const int64_t max_len = cs[axis], len = upd.shape()[axis];
  const size_t block = static_cast<size_t>(inner) * dtype_size(cache.dtype());
  std::vector<int64_t> start(static_cast<size_t>(cs[0]), 0);
  if (ctx.has_input(2)) {
    const Tensor &w = ctx.input(2);
    if (w.numel() != cs[0]) ctx.fail("write_indices must hold one index per batch entry");
    for (int64_t b = 0; b < cs[0]; ++b)
      start[static_cast<size_t>(b)] =
          w.dtype() == DType::Int32 ? w.data<int32_t>()[b] : w.data<int64_t>()[b];
  }
  const auto position = [&](int64_t o, int64_t i) {
    const int64_t at = start[static_cast<size_t>(o / per_batch)] + i;
    return circular ? ((at % max_len) + max_len) % max_len : at;
  };
  for (int64_t b = 0; b < cs[0]; ++b)
    for (int64_t i = 0; i < len; ++i) {
      const int64_t at = position(b * per_batch, i);
      if (at < 0 || at >= max_len)
        ctx.fail("write position ", at, " is out of range for axis ", axis, " of size ", max_len);
    }
  auto *dst = static_cast<char *>(y.raw_data());
  if (y.raw_data() != cache.raw_data()) std::memcpy(dst, cache.raw_data(), cache.nbytes());
  const auto *src = static_cast<const char *>(upd.raw_data());
  ctx.pool.parallel_for(outer * len, std::max<int64_t>(1, kGrain / std::max<size_t>(1, block)),
                        [&](int64_t b, int64_t e) {
                          for (int64_t t = b; t < e; ++t) {
                            const int64_t o = t / len, i = t % len;
                            std::memcpy(
                                dst + static_cast<size_t>(o * max_len + position(o, i)) * block,
                                src + static_cast<size_t>(t) * block, block);
                          }
                        });
}

LUMEN_REGISTER_KERNEL("cpu", "compress", compress, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "unique", unique_kernel, DType::Float32, DType::Float64, DType::Int8,
                      DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::Bool,
                      DType::BFloat16);
LUMEN_REGISTER_KERNEL("cpu", "tensor_scatter", tensor_scatter, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "gather_elements", gather_elements, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "gather_nd", gather_nd, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "scatter_nd", scatter_nd, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "non_zero", non_zero, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "scatter_elements", scatter_elements, LUMEN_ALL_DTYPES);

}  // namespace
}  // namespace lumen
