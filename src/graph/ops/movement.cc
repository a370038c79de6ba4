// Data-movement ops of any dtype (they copy elements, never compute with them, except range and
// eye_like which make values). Inputs holding shapes, indices or pads are read with
// ctx.int_values(); when unknown at build time the output shapes are deferred to run time.
//   expand(x, shape)                       ONNX bidirectional broadcast of x to shape
//   tile(x, repeats)
//   slice(x, starts, ends, axes?, steps?)  ONNX Slice (opset 10+) clamping rules
//   split(x, split?)                       attrs axis, index, num_outputs, split: part `index`
//   pad(x, pads, constant_value?, axes?)   attrs mode (constant|reflect|edge|wrap), value
//   range(start, limit, delta)
//   trilu(x, k?)                           attr upper
//   depth_to_space(x)                      attrs blocksize, mode (DCR|CRD)
//   space_to_depth(x)                      attrs blocksize, mode (DCR|CRD)
//   eye_like(x)                            attrs k, dtype (name; default x's dtype)
//   reverse_sequence(x, lens)              attrs batch_axis, time_axis
//   center_crop_pad(x, shape)              attr axes
//   col2im(x, image_shape, block_shape)    attrs dilations, pads, strides (sums overlaps)
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

std::vector<int64_t> values_or_defer(const InferContext &ctx, size_t i, DType out) {
  const auto v = ctx.int_values(i);
  if (!v) ctx.defer({out});
  return *v;
}

int64_t normalize(const InferContext &ctx, int64_t axis, size_t rank_u) {
  const auto rank = static_cast<int64_t>(rank_u);
  if (axis < -rank || axis >= rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// Axes from input `i` (all dims when absent), normalized and checked for repeats.
std::vector<int64_t> axes_of(const InferContext &ctx, size_t i, size_t rank, size_t expected,
                             DType out) {
  std::vector<int64_t> axes;
  if (ctx.has_input(i)) {
    axes = values_or_defer(ctx, i, out);
  } else if (ctx.attrs.has("axes")) {
    axes = ctx.attrs.get_ints("axes", {});
  } else {
    for (size_t a = 0; a < std::min(rank, expected); ++a) axes.push_back(static_cast<int64_t>(a));
  }
  std::set<int64_t> seen;
  for (int64_t &a : axes) {
    a = normalize(ctx, a, rank);
    if (!seen.insert(a).second) ctx.fail("axis ", a, " is repeated in axes");
  }
  return axes;
}

std::vector<TensorType> infer_expand(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto shape = values_or_defer(ctx, 1, x.dtype);
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape ", ints_to_string(shape), " has a negative dim");
  const auto out = broadcast_shapes(x.shape, Shape(shape));
  if (!out)
    ctx.fail("cannot expand input ", x.shape.to_string(), " to shape ", ints_to_string(shape));
  return {TensorType{x.dtype, *out}};
}

// A dim divided by a positive factor it is a multiple of; unknown stays unknown.
int64_t divide_dim(int64_t dim, int64_t factor) {
  return dim == kUnknownDim ? kUnknownDim : dim / factor;
}

std::vector<TensorType> infer_tile(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto repeats = values_or_defer(ctx, 1, x.dtype);
  if (repeats.size() != x.shape.rank())
    ctx.fail("repeats ", ints_to_string(repeats), " must have one value per dim of input ",
             x.shape.to_string());
  std::vector<int64_t> dims(repeats.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) ctx.fail("repeats ", ints_to_string(repeats), " has a negative value");
    dims[i] = mul_dims(ctx, x.shape[i], repeats[i]);
  }
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_slice(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const size_t rank = x.shape.rank();
  const auto starts = values_or_defer(ctx, 1, x.dtype);
  const auto ends = values_or_defer(ctx, 2, x.dtype);
  if (starts.size() != ends.size())
    ctx.fail("starts ", ints_to_string(starts), " and ends ", ints_to_string(ends),
             " differ in length");
  const auto axes = axes_of(ctx, 3, rank, starts.size(), x.dtype);
  if (axes.size() != starts.size())
    ctx.fail("axes has ", axes.size(), " values, starts has ", starts.size());
  std::vector<int64_t> steps(starts.size(), 1);
  if (ctx.has_input(4)) steps = values_or_defer(ctx, 4, x.dtype);
  if (steps.size() != starts.size())
    ctx.fail("steps has ", steps.size(), " values, starts has ", starts.size());
  std::vector<int64_t> dims = x.shape.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = x.shape[axes[i]], step = steps[i];
    if (step == 0) ctx.fail("steps must not be 0");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    // Counts in unsigned arithmetic: |step| may be as large as 2^63.
    const uint64_t magnitude = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
    if (dim == 0) {
      dims[axes[i]] = 0;
    } else if (step > 0) {
      start = std::clamp(start, int64_t{0}, dim);
      end = std::clamp(end, int64_t{0}, dim);
      dims[axes[i]] = end > start ? int64_t(uint64_t(end - start - 1) / magnitude) + 1 : 0;
    } else {
      start = std::clamp(start, int64_t{0}, dim - 1);
      end = std::clamp(end, int64_t{-1}, dim - 1);
      dims[axes[i]] = start > end ? int64_t(uint64_t(start - end - 1) / magnitude) + 1 : 0;
    }
  }
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_split(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto axis =
      static_cast<size_t>(normalize(ctx, ctx.attrs.get_int("axis", 0), x.shape.rank()));
  const int64_t dim = x.shape[axis];
  const int64_t index = ctx.attrs.get_int("index", 0);
  std::vector<int64_t> sizes;
  if (ctx.has_input(1) || ctx.attrs.has("split")) {
    sizes = ctx.has_input(1) ? values_or_defer(ctx, 1, x.dtype) : ctx.attrs.get_ints("split", {});
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split ", ints_to_string(sizes), " has a negative size");
      total += s;
    }
    if (total != dim)
      ctx.fail("split ", ints_to_string(sizes), " does not sum to dim ", dim, " of input ",
               x.shape.to_string());
  } else {
    const int64_t n = ctx.attrs.get_int("num_outputs", 0);
    if (n <= 0) ctx.fail("num_outputs must be positive, got ", n);
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
  }
  if (index < 0 || index >= static_cast<int64_t>(sizes.size()))
    ctx.fail("index ", index, " is out of range for ", sizes.size(), " parts");
  std::vector<int64_t> dims = x.shape.dims();
  dims[axis] = sizes[index];
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_pad(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const size_t rank = x.shape.rank();
  const std::string mode = ctx.attrs.get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("unknown mode '", mode, "'");
  const auto pads = values_or_defer(ctx, 1, x.dtype);
  const auto axes = axes_of(ctx, 3, rank, rank, x.dtype);
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads ", ints_to_string(pads), " must have 2 values per padded axis (", axes.size(),
             " axes)");
  if (ctx.has_input(2)) {
    if (ctx.input(2).dtype != x.dtype)
      ctx.fail("constant_value is ", dtype_name(ctx.input(2).dtype), ", input is ",
               dtype_name(x.dtype));
    if (ctx.input(2).shape.numel() != 1) ctx.fail("constant_value must hold one element");
  }
  std::vector<int64_t> dims = x.shape.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = dims[axes[i]];
    int64_t out;
    if (__builtin_add_overflow(d, pads[i], &out) ||
        __builtin_add_overflow(out, pads[i + axes.size()], &out) || out < 0)
      ctx.fail("pads ", ints_to_string(pads), " give an invalid size for input ",
               x.shape.to_string());
    if (mode != "constant" && d == 0 && out > 0)
      ctx.fail("mode ", mode, " cannot pad an empty dim of input ", x.shape.to_string());
    dims[axes[i]] = out;
  }
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

double scalar_as_double(const InferContext &ctx, size_t i) {
  const Tensor *t = ctx.value(i);
  if (!t) ctx.defer({ctx.input(0).dtype});
  if (t->numel() != 1) ctx.fail("input ", i, " must be a scalar, got ", t->shape().to_string());
  switch (t->dtype()) {
    case DType::Float32:
      return t->data<float>()[0];
    case DType::Float64:
      return t->data<double>()[0];
    case DType::Int16:
      return t->data<int16_t>()[0];
    case DType::Int32:
      return t->data<int32_t>()[0];
    case DType::Int64:
      return static_cast<double>(t->data<int64_t>()[0]);
    case DType::Float16: {
      const uint16_t h = t->data<Float16>()[0].bits;
      const int e = (h >> 10) & 31, m = h & 1023;
      const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case DType::BFloat16: {
      const uint32_t bits = uint32_t{t->data<BFloat16>()[0].bits} << 16;
      float f;
      static_assert(sizeof(f) == sizeof(bits));
      __builtin_memcpy(&f, &bits, sizeof(f));
      return f;
    }
    default:
      ctx.fail("unsupported dtype ", dtype_name(t->dtype()));
  }
}

std::vector<TensorType> infer_range(const InferContext &ctx) {
  const DType dtype = ctx.input(0).dtype;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).dtype != dtype)
      ctx.fail("start, limit and delta must share a dtype; input ", i, " is ",
               dtype_name(ctx.input(i).dtype), ", start is ", dtype_name(dtype));
  const double start = scalar_as_double(ctx, 0), limit = scalar_as_double(ctx, 1),
               delta = scalar_as_double(ctx, 2);
  if (delta == 0) ctx.fail("delta must not be 0");
  const double n = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(n < 9.0e15)) ctx.fail("range has too many elements (", n, ")");
  return {TensorType{dtype, Shape{static_cast<int64_t>(n)}}};
}

std::vector<TensorType> infer_trilu(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.shape.rank() < 2) ctx.fail("input must have rank >= 2, got ", x.shape.to_string());
  if (ctx.has_input(1)) {
    const auto k = values_or_defer(ctx, 1, x.dtype);
    if (k.size() != 1) ctx.fail("k must be a scalar");
  }
  return {x};
}

std::vector<TensorType> infer_depth_to_space(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const int64_t b = ctx.attrs.get_int("blocksize", 0);
  const std::string mode = ctx.attrs.get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, got '", mode, "'");
  if (x.shape.rank() != 4) ctx.fail("input must be 4-D, got ", x.shape.to_string());
  if (b <= 0) ctx.fail("blocksize must be positive, got ", b);
  const int64_t bb = mul_or_fail(ctx, b, b);
  if (x.shape[1] != kUnknownDim && x.shape[1] % bb != 0)
    ctx.fail("channels of input ", x.shape.to_string(), " are not divisible by blocksize^2 ", bb);
  return {TensorType{x.dtype, Shape{x.shape[0], divide_dim(x.shape[1], bb),
                                    mul_dims(ctx, x.shape[2], b), mul_dims(ctx, x.shape[3], b)}}};
}

std::vector<TensorType> infer_space_to_depth(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const int64_t b = ctx.attrs.get_int("blocksize", 0);
  const std::string mode = ctx.attrs.get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, got '", mode, "'");
  if (x.shape.rank() != 4) ctx.fail("input must be 4-D, got ", x.shape.to_string());
  if (b <= 0) ctx.fail("blocksize must be positive, got ", b);
  for (int d : {2, 3})
    if (x.shape[d] != kUnknownDim && x.shape[d] % b != 0)
      ctx.fail("spatial dims of input ", x.shape.to_string(), " are not divisible by blocksize ",
               b);
  return {TensorType{x.dtype, Shape{x.shape[0], mul_dims(ctx, x.shape[1], mul_or_fail(ctx, b, b)),
                                    divide_dim(x.shape[2], b), divide_dim(x.shape[3], b)}}};
}

std::vector<TensorType> infer_eye_like(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.shape.rank() != 2) ctx.fail("input must be 2-D, got ", x.shape.to_string());
  const std::string name = ctx.attrs.get_string("dtype", "");
  return {TensorType{name.empty() ? x.dtype : dtype_from_name(name), x.shape}};
}

std::vector<TensorType> infer_reverse_sequence(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.shape.rank() < 2) ctx.fail("input must have rank >= 2, got ", x.shape.to_string());
  const int64_t batch = ctx.attrs.get_int("batch_axis", 1),
                time = ctx.attrs.get_int("time_axis", 0);
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 (either order), got ", batch, " and ", time);
  const TensorType &lens = ctx.input(1);
  if (lens.dtype != DType::Int64 && lens.dtype != DType::Int32)
    ctx.fail("sequence_lens must be int64, got ", dtype_name(lens.dtype));
  if (lens.shape.rank() != 1 || lens.shape[0] != x.shape[batch])
    ctx.fail("sequence_lens ", lens.shape.to_string(), " must hold one length per batch of input ",
             x.shape.to_string());
  if (const auto v = ctx.int_values(1))
    for (int64_t l : *v)
      if (l < 0 || l > x.shape[time])
        ctx.fail("sequence length ", l, " is out of range [0, ", x.shape[time], "]");
  return {x};
}

std::vector<TensorType> infer_center_crop_pad(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto shape = values_or_defer(ctx, 1, x.dtype);
  const auto axes = axes_of(ctx, 2, x.shape.rank(), x.shape.rank(), x.dtype);
  if (shape.size() != axes.size())
    ctx.fail("shape ", ints_to_string(shape), " must have one value per axis (", axes.size(), ")");
  std::vector<int64_t> dims = x.shape.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0) ctx.fail("shape ", ints_to_string(shape), " has a negative dim");
    dims[axes[i]] = shape[i];
  }
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_col2im(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_floating(x.dtype)) ctx.fail("input must be floating point, got ", dtype_name(x.dtype));
  if (x.shape.rank() != 3)
    ctx.fail("input must be 3-D [N, C*prod(block), L], got ", x.shape.to_string());
  const auto image = values_or_defer(ctx, 1, x.dtype);
  const auto block = values_or_defer(ctx, 2, x.dtype);
  const size_t n = image.size();
  if (n == 0 || block.size() != n)
    ctx.fail("image_shape ", ints_to_string(image), " and block_shape ", ints_to_string(block),
             " must be non-empty and of the same length");
  const auto strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
  const auto dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
  const auto pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n)
    ctx.fail("strides, dilations and pads must have ", n, ", ", n, " and ", 2 * n, " values");
  int64_t block_size = 1, blocks = 1;
  for (size_t i = 0; i < n; ++i) {
    if (block[i] <= 0 || image[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0 || pads[i] < 0 ||
        pads[i + n] < 0)
      ctx.fail("image_shape, block_shape, strides and dilations must be positive and pads >= 0");
    block_size = mul_or_fail(ctx, block_size, block[i]);
    const int64_t span = image[i] + pads[i] + pads[i + n] - dilations[i] * (block[i] - 1) - 1;
    if (span < 0) ctx.fail("block ", ints_to_string(block), " does not fit the padded image");
    blocks = mul_or_fail(ctx, blocks, span / strides[i] + 1);
  }
  if (x.shape[1] % block_size != 0)
    ctx.fail("dim 1 of input ", x.shape.to_string(), " is not divisible by the block size ",
             block_size);
  if (x.shape[2] != blocks)
    ctx.fail("input ", x.shape.to_string(), " has ", x.shape[2], " blocks, the image has ", blocks);
  std::vector<int64_t> dims{x.shape[0], x.shape[1] / block_size};
  dims.insert(dims.end(), image.begin(), image.end());
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

LUMEN_REGISTER_OP({.name = "col2im", .min_inputs = 3, .max_inputs = 3, .infer = infer_col2im});
LUMEN_REGISTER_OP({.name = "expand", .min_inputs = 2, .max_inputs = 2, .infer = infer_expand});
LUMEN_REGISTER_OP({.name = "tile", .min_inputs = 2, .max_inputs = 2, .infer = infer_tile});
LUMEN_REGISTER_OP({.name = "slice", .min_inputs = 3, .max_inputs = 5, .infer = infer_slice});
LUMEN_REGISTER_OP({.name = "split", .max_inputs = 2, .infer = infer_split});
LUMEN_REGISTER_OP({.name = "pad", .min_inputs = 2, .max_inputs = 4, .infer = infer_pad});
LUMEN_REGISTER_OP({.name = "range", .min_inputs = 3, .max_inputs = 3, .infer = infer_range});
LUMEN_REGISTER_OP({.name = "trilu", .max_inputs = 2, .infer = infer_trilu});
LUMEN_REGISTER_OP({.name = "depth_to_space", .infer = infer_depth_to_space});
LUMEN_REGISTER_OP({.name = "space_to_depth", .infer = infer_space_to_depth});
LUMEN_REGISTER_OP({.name = "eye_like", .infer = infer_eye_like});
LUMEN_REGISTER_OP({.name = "reverse_sequence",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_reverse_sequence});
LUMEN_REGISTER_OP(
    {.name = "center_crop_pad", .min_inputs = 2, .max_inputs = 3, .infer = infer_center_crop_pad});

}  // namespace
}  // namespace lumen
