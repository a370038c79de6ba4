// Indexing ops of any data dtype: gather, gather_elements, gather_nd, scatter_elements,
// scatter_nd, tensor_scatter, one_hot, non_zero, compress and unique. Index values are checked by
// the kernels (they are usually only known at run time); shapes whose size depends on values
// (non_zero, compress, one_hot's depth) wait for run time unless the values are constants.
// Semantics follow ONNX.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "graph/ops/indexing.h"

#include "graph/op_schema.h"

namespace lumen {

namespace indexing_detail {

// Three-way comparison of elements a and b of t by value (bytes for dtypes without an order).
int compare_elements(const Tensor &t, int64_t a, int64_t b) {
  auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  switch (t.dtype()) {
    case DType::Float32:
      return cmp(t.data<float>()[a], t.data<float>()[b]);
    case DType::Float64:
      return cmp(t.data<double>()[a], t.data<double>()[b]);
    case DType::Int8:
      return cmp(t.data<int8_t>()[a], t.data<int8_t>()[b]);
    case DType::Int16:
      return cmp(t.data<int16_t>()[a], t.data<int16_t>()[b]);
    case DType::Int32:
      return cmp(t.data<int32_t>()[a], t.data<int32_t>()[b]);
    case DType::Int64:
      return cmp(t.data<int64_t>()[a], t.data<int64_t>()[b]);
    case DType::UInt8:
      return cmp(t.data<uint8_t>()[a], t.data<uint8_t>()[b]);
    case DType::Bool:
      return cmp(t.data<bool>()[a], t.data<bool>()[b]);
    case DType::BFloat16: {
      auto as_float = [](BFloat16 h) { return std::bit_cast<float>(uint32_t(h.bits) << 16); };
      return cmp(as_float(t.data<BFloat16>()[a]), as_float(t.data<BFloat16>()[b]));
    }
    default:
      fail("unique does not support ", dtype_name(t.dtype()));
  }
}

void unique_slices(const Tensor &x, int64_t axis, bool sorted, std::vector<int64_t> &first,
                   std::vector<int64_t> &inverse, std::vector<int64_t> &counts) {
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis >= 0) {
    const auto a = static_cast<size_t>(axis);
    outer = 1;
    inner = 1;
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d < a) outer *= x.shape()[d];
      if (d > a) inner *= x.shape()[d];
    }
    n = x.shape()[a];
  }
  // Slices compare lexicographically in (outer, inner) order, as NumPy's unique with an axis.
  auto compare_slices = [&](int64_t p, int64_t q) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int c = compare_elements(x, (o * n + p) * inner + i, (o * n + q) * inner + i);
        if (c) return c;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) order[static_cast<size_t>(j)] = j;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return compare_slices(p, q) < 0; });
  // Groups of equal slices in sorted order; the first of each is its first occurrence.
  std::vector<int64_t> group_of(static_cast<size_t>(n));
  first.clear();
  counts.clear();
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compare_slices(order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      counts.push_back(0);
    }
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size() - 1);
    ++counts.back();
  }
  std::vector<int64_t> rank(first.size());
  for (size_t g = 0; g < first.size(); ++g) rank[g] = static_cast<int64_t>(g);
  if (!sorted) {
    std::vector<size_t> by_first(first.size());
    for (size_t g = 0; g < by_first.size(); ++g) by_first[g] = g;
    std::sort(by_first.begin(), by_first.end(),
              [&](size_t a, size_t b) { return first[a] < first[b]; });
    std::vector<int64_t> f(first.size()), c(first.size());
    for (size_t r = 0; r < by_first.size(); ++r) {
      f[r] = first[by_first[r]];
      c[r] = counts[by_first[r]];
      rank[by_first[r]] = static_cast<int64_t>(r);
    }
    first = std::move(f);
    counts = std::move(c);
  }
  inverse.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    inverse[static_cast<size_t>(j)] = rank[static_cast<size_t>(group_of[static_cast<size_t>(j)])];
}

}  // namespace indexing_detail

namespace {

size_t axis_or_fail(const InferContext &ctx, int64_t axis, size_t rank, const Shape &shape) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    ctx.fail("axis ", axis, " is out of range for input ", shape.to_string(), " of rank ", rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

void check_index_dtype(const InferContext &ctx, size_t i) {
  const DType d = ctx.input(i).dtype;
  if (d != DType::Int32 && d != DType::Int64)
    ctx.fail("indices (input ", i, ") must be int32 or int64, got ", dtype_name(d));
}

// data[:axis] + indices.shape + data[axis+1:]
std::vector<TensorType> infer_gather(const InferContext &ctx) {
  const TensorType &data = ctx.input(0), &idx = ctx.input(1);
  check_index_dtype(ctx, 1);
  if (data.shape.rank() == 0) ctx.fail("data must have rank >= 1");
  const size_t axis =
      axis_or_fail(ctx, ctx.attrs.get_int("axis", 0), data.shape.rank(), data.shape);
  std::vector<int64_t> dims(data.shape.dims().begin(), data.shape.dims().begin() + axis);
  dims.insert(dims.end(), idx.shape.begin(), idx.shape.end());
  dims.insert(dims.end(), data.shape.dims().begin() + axis + 1, data.shape.dims().end());
  return {TensorType{data.dtype, Shape(std::move(dims))}};
}

// Output has the indices' shape; indices may not exceed data off the axis.
std::vector<TensorType> infer_gather_elements(const InferContext &ctx) {
  const TensorType &data = ctx.input(0), &idx = ctx.input(1);
  check_index_dtype(ctx, 1);
  if (data.shape.rank() == 0 || idx.shape.rank() != data.shape.rank())
    ctx.fail("data ", data.shape.to_string(), " and indices ", idx.shape.to_string(),
             " must have the same rank >= 1");
  const size_t axis =
      axis_or_fail(ctx, ctx.attrs.get_int("axis", 0), data.shape.rank(), data.shape);
  for (size_t d = 0; d < data.shape.rank(); ++d)
    if (d != axis && idx.shape[d] > data.shape[d])
      ctx.fail("indices ", idx.shape.to_string(), " exceed data ", data.shape.to_string(),
               " in dim ", d);
  return {TensorType{data.dtype, idx.shape}};
}

// indices[..., m] pick slices of data after batch_dims leading dims shared by both.
std::vector<TensorType> infer_gather_nd(const InferContext &ctx) {
  const TensorType &data = ctx.input(0), &idx = ctx.input(1);
  check_index_dtype(ctx, 1);
  const int64_t b = ctx.attrs.get_int("batch_dims", 0);
  const auto r = static_cast<int64_t>(data.shape.rank());
  const auto q = static_cast<int64_t>(idx.shape.rank());
  if (q < 1 || r < 1) ctx.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    ctx.fail("batch_dims ", b, " must be in [0, min(rank(data), rank(indices)))");
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[d] != idx.shape[d])
      ctx.fail("batch dim ", d, " differs: data ", data.shape.to_string(), ", indices ",
               idx.shape.to_string());
  const int64_t m = idx.shape[q - 1];
  if (m < 1 || m > r - b)
    ctx.fail("the last dim of indices ", idx.shape.to_string(), " must be in [1, ", r - b,
             "] for data ", data.shape.to_string());
  std::vector<int64_t> dims(idx.shape.dims().begin(), idx.shape.dims().end() - 1);
  dims.insert(dims.end(), data.shape.dims().begin() + b + m, data.shape.dims().end());
  return {TensorType{data.dtype, Shape(std::move(dims))}};
}

void check_reduction(const InferContext &ctx) {
  const std::string red = ctx.attrs.get_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    ctx.fail("reduction '", red, "' is not supported (none, add, mul, max, min)");
}

std::vector<TensorType> infer_scatter_elements(const InferContext &ctx) {
  const TensorType &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  check_index_dtype(ctx, 1);
  check_reduction(ctx);
  if (upd.dtype != data.dtype)
    ctx.fail("updates (", dtype_name(upd.dtype), ") must have the dtype of data (",
             dtype_name(data.dtype), ")");
  if (idx.shape != upd.shape)
    ctx.fail("indices ", idx.shape.to_string(), " and updates ", upd.shape.to_string(),
             " must have the same shape");
  if (data.shape.rank() == 0 || idx.shape.rank() != data.shape.rank())
    ctx.fail("data ", data.shape.to_string(), " and indices ", idx.shape.to_string(),
             " must have the same rank >= 1");
  const size_t axis =
      axis_or_fail(ctx, ctx.attrs.get_int("axis", 0), data.shape.rank(), data.shape);
  for (size_t d = 0; d < data.shape.rank(); ++d)
    if (d != axis && idx.shape[d] > data.shape[d])
      ctx.fail("indices ", idx.shape.to_string(), " exceed data ", data.shape.to_string(),
               " in dim ", d);
  return {data};
}

// updates.shape == indices.shape[:-1] + data.shape[k:] with k = indices.shape[-1].
std::vector<TensorType> infer_scatter_nd(const InferContext &ctx) {
  const TensorType &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  check_index_dtype(ctx, 1);
  check_reduction(ctx);
  if (upd.dtype != data.dtype)
    ctx.fail("updates (", dtype_name(upd.dtype), ") must have the dtype of data (",
             dtype_name(data.dtype), ")");
  const size_t q = idx.shape.rank();
  if (q < 1) ctx.fail("indices must have rank >= 1");
  const int64_t k = idx.shape[q - 1];
  if (k < 1 || k > static_cast<int64_t>(data.shape.rank()))
    ctx.fail("the last dim of indices ", idx.shape.to_string(),
             " must be in [1, rank(data) = ", data.shape.rank(), "]");
  std::vector<int64_t> want(idx.shape.dims().begin(), idx.shape.dims().end() - 1);
  want.insert(want.end(), data.shape.dims().begin() + k, data.shape.dims().end());
  if (upd.shape != Shape(want))
    ctx.fail("updates ", upd.shape.to_string(), " must have shape ", Shape(want).to_string(),
             " for data ", data.shape.to_string(), " and indices ", idx.shape.to_string());
  return {data};
}

// A scalar input's value as an integer (any numeric dtype; floats truncate).
std::optional<int64_t> scalar_int(const InferContext &ctx, size_t i, const char *what) {
  const Tensor *t = ctx.value(i);
  if (!t) return std::nullopt;
  if (t->numel() != 1) ctx.fail(what, " must hold exactly one value, got ", t->numel());
  switch (t->dtype()) {
    case DType::Float32:
      return static_cast<int64_t>(t->data<float>()[0]);
    case DType::Float64:
      return static_cast<int64_t>(t->data<double>()[0]);
    case DType::Int32:
      return t->data<int32_t>()[0];
    case DType::Int64:
      return t->data<int64_t>()[0];
    case DType::Int8:
      return t->data<int8_t>()[0];
    case DType::UInt8:
      return t->data<uint8_t>()[0];
    default:
      ctx.fail(what, " has unsupported dtype ", dtype_name(t->dtype()));
  }
}

// Inputs: indices, depth (scalar), values ([off, on]); output dtype is that of values.
std::vector<TensorType> infer_one_hot(const InferContext &ctx) {
  const TensorType &idx = ctx.input(0), &values = ctx.input(2);
  if (values.shape.rank() != 1 || values.shape[0] != 2)
    ctx.fail("values must have shape [2] (off, on), got ", values.shape.to_string());
  const auto depth = scalar_int(ctx, 1, "depth");
  if (!depth) ctx.defer({values.dtype});
  if (*depth < 1) ctx.fail("depth must be >= 1, got ", *depth);
  const size_t out_rank = idx.shape.rank() + 1;
  const size_t axis = axis_or_fail(ctx, ctx.attrs.get_int("axis", -1), out_rank, idx.shape);
  std::vector<int64_t> dims = idx.shape.dims();
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), *depth);
  return {TensorType{values.dtype, Shape(std::move(dims))}};
}

bool is_nonzero(const Tensor &t, int64_t i) {
  const auto *p = static_cast<const unsigned char *>(t.raw_data());
  switch (t.dtype()) {
    case DType::Float32:
      return t.data<float>()[i] != 0.f;
    case DType::Float64:
      return t.data<double>()[i] != 0.0;
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      return (bits & 0x7fff) != 0;
    }
    default: {
      const size_t e = dtype_size(t.dtype());
      for (size_t b = 0; b < e; ++b)
        if (p[static_cast<size_t>(i) * e + b]) return true;
      return false;
    }
  }
}

std::vector<TensorType> infer_non_zero(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const Tensor *v = ctx.value(0);
  if (!v) ctx.defer({DType::Int64});
  int64_t count = 0;
  for (int64_t i = 0, n = v->numel(); i < n; ++i) count += is_nonzero(*v, i) ? 1 : 0;
  return {TensorType{DType::Int64, Shape{static_cast<int64_t>(x.shape.rank()), count}}};
}

// Inputs: x, condition (1-D bool). Without axis, x is flattened first.
std::vector<TensorType> infer_compress(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &cond = ctx.input(1);
  if (cond.dtype != DType::Bool) ctx.fail("condition must be bool, got ", dtype_name(cond.dtype));
  if (cond.shape.rank() != 1) ctx.fail("condition must be 1-D, got ", cond.shape.to_string());
  const bool has_axis = ctx.attrs.has("axis");
  size_t axis = 0;
  int64_t extent = 0;
  if (has_axis) {
    axis = axis_or_fail(ctx, ctx.attrs.get_int("axis", 0), x.shape.rank(), x.shape);
    extent = x.shape[axis];
  } else {
    extent = x.shape.numel();
  }
  if (cond.shape[0] > extent)
    ctx.fail("condition ", cond.shape.to_string(), " is longer than the ", extent,
             " elements it selects from in input ", x.shape.to_string());
  const Tensor *c = ctx.value(1);
  if (!c) ctx.defer({x.dtype});
  int64_t count = 0;
  for (int64_t i = 0, n = c->numel(); i < n; ++i) count += c->data<bool>()[i] ? 1 : 0;
  if (!has_axis) return {TensorType{x.dtype, Shape{count}}};
  std::vector<int64_t> dims = x.shape.dims();
  dims[axis] = count;
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

// Outputs: unique values (slices), first-occurrence indices, inverse indices, counts.
std::vector<TensorType> infer_unique(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const bool has_axis = ctx.attrs.has("axis");
  const int64_t axis = has_axis ? static_cast<int64_t>(axis_or_fail(
                                      ctx, ctx.attrs.get_int("axis", 0), x.shape.rank(), x.shape))
                                : -1;
  const Tensor *v = ctx.value(0);
  if (!v) ctx.defer({x.dtype, DType::Int64, DType::Int64, DType::Int64});
  std::vector<int64_t> first, inverse, counts;
  try {
    indexing_detail::unique_slices(*v, axis, ctx.attrs.get_int("sorted", 1) != 0, first, inverse,
                                   counts);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  const auto u = static_cast<int64_t>(first.size());
  Shape y{u};
  if (has_axis) {
    y = x.shape;
    y[static_cast<size_t>(axis)] = u;
  }
  return {TensorType{x.dtype, y}, TensorType{DType::Int64, Shape{u}},
          TensorType{DType::Int64, Shape{static_cast<int64_t>(inverse.size())}},
          TensorType{DType::Int64, Shape{u}}};
}

// ONNX TensorScatter (KV-cache update): inputs past_cache, update, optional write_indices [B];
// update matches the cache except along `axis`, where it may be shorter.
std::vector<TensorType> infer_tensor_scatter(const InferContext &ctx) {
  const TensorType &cache = ctx.input(0), &upd = ctx.input(1);
  if (upd.dtype != cache.dtype)
    ctx.fail("update (", dtype_name(upd.dtype), ") must have the dtype of the cache (",
             dtype_name(cache.dtype), ")");
  const std::string mode = ctx.attrs.get_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    ctx.fail("mode '", mode, "' is not supported (linear, circular)");
  const size_t rank = cache.shape.rank();
  const size_t axis = axis_or_fail(ctx, ctx.attrs.get_int("axis", -2), rank, cache.shape);
  if (axis == 0) ctx.fail("axis must not be the batch axis 0");
  if (upd.shape.rank() != rank)
    ctx.fail("update ", upd.shape.to_string(), " and cache ", cache.shape.to_string(),
             " must have the same rank");
  for (size_t d = 0; d < rank; ++d)
    if (d == axis ? upd.shape[d] > cache.shape[d] : upd.shape[d] != cache.shape[d])
      ctx.fail("update ", upd.shape.to_string(), " does not fit cache ", cache.shape.to_string(),
               " in dim ", d);
  if (ctx.has_input(2)) {
    check_index_dtype(ctx, 2);
    const Shape &w = ctx.input(2).shape;
    if (w.rank() != 1 || w[0] != cache.shape[0])
      ctx.fail("write_indices ", w.to_string(), " must have shape [", cache.shape[0], "]");
  }
  return {cache};
}

LUMEN_REGISTER_OP({.name = "gather", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather});
LUMEN_REGISTER_OP(
    {.name = "gather_elements", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather_elements});
LUMEN_REGISTER_OP(
    {.name = "gather_nd", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather_nd});
LUMEN_REGISTER_OP({.name = "scatter_elements",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_scatter_elements});
LUMEN_REGISTER_OP(
    {.name = "scatter_nd", .min_inputs = 3, .max_inputs = 3, .infer = infer_scatter_nd});
LUMEN_REGISTER_OP({.name = "one_hot", .min_inputs = 3, .max_inputs = 3, .infer = infer_one_hot});
LUMEN_REGISTER_OP({.name = "non_zero", .infer = infer_non_zero});
LUMEN_REGISTER_OP(
    {.name = "tensor_scatter", .min_inputs = 2, .max_inputs = 3, .infer = infer_tensor_scatter});
LUMEN_REGISTER_OP({.name = "unique", .num_outputs = 4, .infer = infer_unique});
LUMEN_REGISTER_OP({.name = "compress", .min_inputs = 2, .max_inputs = 2, .infer = infer_compress});

}  // namespace
}  // namespace lumen
