// Reference indexing kernels: gather, gather_elements, gather_nd, scatter_elements, scatter_nd,
// tensor_scatter, one_hot, non_zero, compress and unique. Data moves as bytes (any dtype); scatter
// reductions are typed. Every index is checked against its dim (negative ones count from the end)
// before any access.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/common/index_value.h"
#include "backends/common/nd_index_geometry.h"
#include "backends/common/unique_kernel.h"
#include "core/kernel.h"

namespace lumen {
namespace {

#define LUMEN_ALL_DTYPES                                                                      \
  DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8, DType::Int16, \
      DType::Int32, DType::Int64, DType::UInt8, DType::Bool

size_t kernel_axis(const KernelContext &ctx, int64_t axis, const Shape &shape) {
  const auto r = static_cast<int64_t>(shape.rank());
  if (axis < -r || axis >= r)
    ctx.fail("axis ", axis, " is out of range for input ", shape.to_string());
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

int64_t index_at(const KernelContext &ctx, const Tensor &idx, int64_t i) {
  if (idx.dtype() == DType::Int64) return idx.data<int64_t>()[i];
  if (idx.dtype() == DType::Int32) return idx.data<int32_t>()[i];
  ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype()));
}

// An index into a dim of size n: [-n, n) is valid, negative counts from the end.
int64_t resolve(const KernelContext &ctx, int64_t v, int64_t n, size_t dim) {
  if (v < -n || v >= n) ctx.fail("index ", v, " is out of range for dim ", dim, " of size ", n);
  return v < 0 ? v + n : v;
}

const char *bytes(const Tensor &t) {
  return static_cast<const char *>(t.raw_data());
}
char *bytes(Tensor &t) {
  return static_cast<char *>(t.raw_data());
}

// ---- gathers ----------------------------------------------------------------------------------

void gather(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", 0), data.shape());
  const int64_t outer = dims_product(data.shape(), 0, axis), n = data.shape()[axis];
  const size_t block = static_cast<size_t>(dims_product(data.shape(), axis + 1, data.rank())) *
                       dtype_size(data.dtype());
  const int64_t m = idx.numel();
  if (static_cast<size_t>(outer * m) * block != y.nbytes())
    ctx.fail("output ", y.shape().to_string(), " does not match data ", data.shape().to_string(),
             " and indices ", idx.shape().to_string());
  for (int64_t j = 0; j < m; ++j) resolve(ctx, index_at(ctx, idx, j), n, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      const int64_t k = resolve(ctx, index_at(ctx, idx, j), n, axis);
      std::memcpy(bytes(y) + static_cast<size_t>(o * m + j) * block,
                  bytes(data) + static_cast<size_t>(o * n + k) * block, block);
    }
}

// Unravels flat index i of `shape` into `index`.
void unravel(int64_t i, const Shape &shape, std::vector<int64_t> &index) {
  for (size_t d = shape.rank(); d-- > 0;) {
    index[d] = i % shape[d];
    i /= shape[d];
  }
}

// Offset into contiguous `data` of an index of `idx_shape` whose axis coordinate is replaced by
// the index value; checks every coordinate.
int64_t element_offset(const KernelContext &ctx, const Shape &data, std::vector<int64_t> &index,
                       size_t axis, int64_t value) {
  index[axis] = resolve(ctx, value, data[axis], axis);
  int64_t off = 0;
  for (size_t d = 0; d < data.rank(); ++d) {
    if (index[d] >= data[d]) ctx.fail("index is out of range for dim ", d, " of size ", data[d]);
    off = off * data[d] + index[d];
  }
  return off;
}

void gather_elements(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (data.rank() != idx.rank() || y.shape() != idx.shape())
    ctx.fail("data ", data.shape().to_string(), ", indices ", idx.shape().to_string(),
             " and output ", y.shape().to_string(), " do not fit");
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", 0), data.shape());
  const size_t elem = dtype_size(data.dtype());
  std::vector<int64_t> index(idx.rank());
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    unravel(i, idx.shape(), index);
    const int64_t off = element_offset(ctx, data.shape(), index, axis, index_at(ctx, idx, i));
    std::memcpy(bytes(y) + static_cast<size_t>(i) * elem,
                bytes(data) + static_cast<size_t>(off) * elem, elem);
  }
}

void gather_nd(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const GatherNdGeometry g = gather_nd_geometry(ctx);
  const size_t b = g.b, m = g.m, slice = g.slice, data_batch = g.data_batch;
  const int64_t batches = g.batches, per_batch = g.per_batch;
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t j = 0; j < per_batch; ++j) {
      int64_t off = 0;
      for (size_t t = 0; t < m; ++t) {
        const int64_t dim = data.shape()[b + t];
        const int64_t v = index_at(
            ctx, idx, (bi * per_batch + j) * static_cast<int64_t>(m) + static_cast<int64_t>(t));
        off = off * dim + resolve(ctx, v, dim, b + t);
      }
      std::memcpy(
          bytes(y) + static_cast<size_t>(bi * per_batch + j) * slice,
          bytes(data) + static_cast<size_t>(bi) * data_batch + static_cast<size_t>(off) * slice,
          slice);
    }
}

// ---- scatters ---------------------------------------------------------------------------------

enum class Red { None, Add, Mul, Max, Min };

Red reduction_of(const KernelContext &ctx) {
  const std::string red = ctx.attrs.get_string("reduction", "none");
  if (red == "none") return Red::None;
  if (red == "add") return Red::Add;
  if (red == "mul") return Red::Mul;
  if (red == "max") return Red::Max;
  if (red == "min") return Red::Min;
  ctx.fail("reduction '", red, "' is not supported (none, add, mul, max, min)");
}

using CombineFn = void (*)(char *dst, const char *src, Red red);

template <class T>
void combine(char *dst, const char *src, Red red) {
  T a, b;
  std::memcpy(&a, dst, sizeof(T));
  std::memcpy(&b, src, sizeof(T));
  switch (red) {
    case Red::None:
      a = b;
      break;
    case Red::Add:
      a = T(a + b);
      break;
    case Red::Mul:
      a = T(a * b);
      break;
    case Red::Max:
      a = b > a ? b : a;
      break;
    case Red::Min:
      a = b < a ? b : a;
      break;
  }
  std::memcpy(dst, &a, sizeof(T));
}

CombineFn combine_fn(const KernelContext &ctx, DType dtype, Red red) {
  switch (dtype) {
    case DType::Float32:
      return combine<float>;
    case DType::Float64:
      return combine<double>;
    case DType::Int32:
      return combine<int32_t>;
    case DType::Int64:
      return combine<int64_t>;
    case DType::Int8:
      return combine<int8_t>;
    case DType::Int16:
      return combine<int16_t>;
    case DType::UInt8:
      return combine<uint8_t>;
    default:
      if (red == Red::None) return nullptr;  // plain byte copies
      ctx.fail("reduction is not supported for ", dtype_name(dtype));
  }
}

void apply(CombineFn fn, char *dst, const char *src, size_t elem, Red red) {
  if (fn)
    fn(dst, src, red);
  else
    std::memcpy(dst, src, elem);
}

void scatter_elements(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  Tensor &y = ctx.output(0);
  if (data.rank() != idx.rank() || upd.shape() != idx.shape() || y.shape() != data.shape() ||
      upd.dtype() != data.dtype())
    ctx.fail("data ", data.shape().to_string(), ", indices ", idx.shape().to_string(),
             " and updates ", upd.shape().to_string(), " do not fit");
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", 0), data.shape());
  const Red red = reduction_of(ctx);
  const CombineFn fn = combine_fn(ctx, data.dtype(), red);
  const size_t elem = dtype_size(data.dtype());
  std::memcpy(bytes(y), bytes(data), data.nbytes());
  std::vector<int64_t> index(idx.rank());
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    unravel(i, idx.shape(), index);
    const int64_t off = element_offset(ctx, data.shape(), index, axis, index_at(ctx, idx, i));
    apply(fn, bytes(y) + static_cast<size_t>(off) * elem,
          bytes(upd) + static_cast<size_t>(i) * elem, elem, red);
  }
}

void scatter_nd(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  Tensor &y = ctx.output(0);
  const ScatterNdGeometry g = scatter_nd_geometry(ctx);
  const size_t k = g.k;
  const int64_t count = g.count, slice = g.slice;
  const Red red = reduction_of(ctx);
  const CombineFn fn = combine_fn(ctx, data.dtype(), red);
  const size_t elem = dtype_size(data.dtype());
  std::memcpy(bytes(y), bytes(data), data.nbytes());
  for (int64_t j = 0; j < count; ++j) {
    int64_t off = 0;
    for (size_t t = 0; t < k; ++t) {
      const int64_t dim = data.shape()[t];
      off = off * dim +
            resolve(ctx, index_at(ctx, idx, j * static_cast<int64_t>(k) + static_cast<int64_t>(t)),
                    dim, t);
    }
    for (int64_t s = 0; s < slice; ++s)
      apply(fn, bytes(y) + static_cast<size_t>(off * slice + s) * elem,
            bytes(upd) + static_cast<size_t>(j * slice + s) * elem, elem, red);
  }
}

// ---- one_hot / non_zero / compress ------------------------------------------------------------

void one_hot(KernelContext &ctx) {
  const Tensor &idx = ctx.input(0), &depth_t = ctx.input(1), &values = ctx.input(2);
  Tensor &y = ctx.output(0);
  if (depth_t.numel() != 1) ctx.fail("depth must hold exactly one value");
  const int64_t depth = index_value(depth_t, 0, INT64_MIN);  // NaN: a negative depth, refused
  if (values.numel() != 2 || values.dtype() != y.dtype())
    ctx.fail("values must hold [off, on] of the output dtype");
  const size_t out_rank = idx.rank() + 1;
  const size_t axis =
      kernel_axis(ctx, ctx.attrs.get_int("axis", -1), Shape(std::vector<int64_t>(out_rank, 1)));
  const int64_t outer = dims_product(idx.shape(), 0, axis);
  const int64_t inner = dims_product(idx.shape(), axis, idx.rank());
  if (checked_mul(checked_mul(outer, inner), depth) != y.numel())
    ctx.fail("output ", y.shape().to_string(), " does not match indices ", idx.shape().to_string(),
             " and depth ", depth);
  const size_t elem = dtype_size(y.dtype());
  for (int64_t i = 0, n = y.numel(); i < n; ++i)
    std::memcpy(bytes(y) + static_cast<size_t>(i) * elem, bytes(values), elem);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t v = index_value(idx, o * inner + in, INT64_MIN);
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // out of range: all off, as ONNX says
      std::memcpy(bytes(y) + static_cast<size_t>((o * depth + v) * inner + in) * elem,
                  bytes(values) + elem, elem);
    }
}

bool is_nonzero(const Tensor &t, int64_t i) {
  const auto *p = static_cast<const unsigned char *>(t.raw_data());
  switch (t.dtype()) {
    case DType::Float32:
      return t.data<float>()[i] != 0.f;
    case DType::Float64:
      return t.data<double>()[i] != 0.0;
    case DType::Float16:
    case DType::BFloat16:
      return ((p[2 * i] | (p[2 * i + 1] << 8)) & 0x7fff) != 0;
    default: {
      const size_t e = dtype_size(t.dtype());
      for (size_t b = 0; b < e; ++b)
        if (p[static_cast<size_t>(i) * e + b]) return true;
      return false;
    }
  }
}

void non_zero(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  int64_t count = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) count += is_nonzero(x, i) ? 1 : 0;
  const auto rank = static_cast<int64_t>(x.rank());
  if (y.shape() != Shape{rank, count})
    ctx.fail("output ", y.shape().to_string(), " should be [", rank, ", ", count, "]");
  int64_t *py = y.data<int64_t>();
  std::vector<int64_t> index(x.rank());
  int64_t c = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    if (!is_nonzero(x, i)) continue;
    unravel(i, x.shape(), index);
    for (int64_t d = 0; d < rank; ++d) py[d * count + c] = index[static_cast<size_t>(d)];
    ++c;
  }
}

void compress(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &cond = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (cond.dtype() != DType::Bool) ctx.fail("condition must be bool");
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (ctx.attrs.has("axis")) {
    const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", 0), x.shape());
    outer = dims_product(x.shape(), 0, axis);
    n = x.shape()[axis];
    inner = dims_product(x.shape(), axis + 1, x.rank());
  }
  if (cond.numel() > n)
    ctx.fail("condition of ", cond.numel(), " values is longer than the ", n, " it selects from");
  const bool *pc = cond.data<bool>();
  int64_t selected = 0;
  for (int64_t j = 0; j < cond.numel(); ++j) selected += pc[j] ? 1 : 0;
  const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  if (static_cast<size_t>(outer * selected) * block != y.nbytes())
    ctx.fail("output ", y.shape().to_string(), " does not match ", selected,
             " selected slices of input ", x.shape().to_string());
  size_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < cond.numel(); ++j) {
      if (!pc[j]) continue;
      std::memcpy(bytes(y) + at, bytes(x) + static_cast<size_t>(o * n + j) * block, block);
      at += block;
    }
}

// Writes update into a copy of the cache at write_indices[b] + i along the axis (modulo the
// axis length in circular mode).
void tensor_scatter(KernelContext &ctx) {
  const Tensor &cache = ctx.input(0), &upd = ctx.input(1);
  Tensor &y = ctx.output(0);
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", -2), cache.shape());
  const bool circular = ctx.attrs.get_string("mode", "linear") == "circular";
  if (axis == 0 || upd.rank() != cache.rank() || y.shape() != cache.shape() ||
      upd.dtype() != cache.dtype())
    ctx.fail("cache ", cache.shape().to_string(), " and update ", upd.shape().to_string(),
             " do not fit");
  for (size_t d = 0; d < cache.rank(); ++d)
    if (d == axis ? upd.shape()[d] > cache.shape()[d] : upd.shape()[d] != cache.shape()[d])
      ctx.fail("update ", upd.shape().to_string(), " does not fit cache ",
               cache.shape().to_string());
  const int64_t outer = dims_product(cache.shape(), 0, axis);
  const int64_t per_batch = dims_product(cache.shape(), 1, axis);
  const int64_t max_len = cache.shape()[axis], len = upd.shape()[axis];
  const size_t block = static_cast<size_t>(dims_product(cache.shape(), axis + 1, cache.rank())) *
                       dtype_size(cache.dtype());
  if (ctx.has_input(2) && ctx.input(2).numel() != cache.shape()[0])
    ctx.fail("write_indices must hold one index per batch entry");
  std::memcpy(bytes(y), bytes(cache), cache.nbytes());
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t start = ctx.has_input(2) ? index_at(ctx, ctx.input(2), o / per_batch) : 0;
    for (int64_t i = 0; i < len; ++i) {
      int64_t at = start + i;
      if (circular) at = ((at % max_len) + max_len) % max_len;
      if (at < 0 || at >= max_len)
        ctx.fail("write position ", at, " is out of range for axis ", axis, " of size ", max_len);
      std::memcpy(bytes(y) + static_cast<size_t>(o * max_len + at) * block,
                  bytes(upd) + static_cast<size_t>(o * len + i) * block, block);
    }
  }
}

LUMEN_REGISTER_KERNEL("reference", "gather", gather, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "gather_elements", gather_elements, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "gather_nd", gather_nd, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "scatter_elements", scatter_elements, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "scatter_nd", scatter_nd, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "one_hot", one_hot, DType::Float32, DType::Float64, DType::Int8,
                      DType::Int16, DType::Int32, DType::Int64, DType::UInt8);
LUMEN_REGISTER_KERNEL("reference", "non_zero", non_zero, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "compress", compress, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "tensor_scatter", tensor_scatter, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "unique", unique_kernel, DType::Float32, DType::Float64,
                      DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8,
                      DType::Bool, DType::BFloat16);

}  // namespace
}  // namespace lumen
