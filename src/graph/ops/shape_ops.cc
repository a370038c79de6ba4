// Shape ops of any dtype. Attribute semantics follow ONNX.
//   reshape(x, shape?)       attr shape (when no input), allowzero
//   transpose(x)             attr perm
//   concat(x...)             attr axis
//   squeeze(x, axes?)        attr axes (when no input); no axes: every dim of size 1
//   unsqueeze(x, axes?)      attr axes (when no input)
//   flatten(x)               attr axis: [prod(dims < axis), prod(dims >= axis)]
//   shape(x), size(x)        int64 results; shape has attrs start, end
//   constant_of_shape(shape) attr value (a one-element tensor; default float32 0)
// Inputs holding shapes or axes are read with ctx.int_values(); when they are not known at build
// time the output shapes are deferred to run time.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

// shape: one -1 is inferred from the element count; 0 copies the input's dim at that index unless
// allowzero=1, when it is a real zero (and then -1 may not appear with it, as in ONNX).
std::vector<TensorType> infer_reshape(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  std::vector<int64_t> target;
  if (ctx.has_input(1)) {
    const auto values = ctx.int_values(1);
    if (!values) ctx.defer({x.dtype});
    if (ctx.input(1).shape.rank() != 1)
      ctx.fail("shape input must be 1-D, got ", ctx.input(1).shape.to_string());
    target = *values;
  } else {
    if (!ctx.attrs.has("shape")) ctx.fail("attribute shape (or a shape input) is required");
    target = ctx.attrs.get_ints("shape", {});
  }
  const bool allowzero = ctx.attrs.get_int("allowzero", 0) != 0;
  std::vector<int64_t> dims(target.size());
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t s = target[i];
    if (s == -1) {
      if (infer_at >= 0) ctx.fail("shape ", ints_to_string(target), " has more than one -1");
      infer_at = static_cast<int>(i);
      dims[i] = kUnknownDim;
    } else if (s == 0 && !allowzero) {
      if (i >= x.shape.rank())
        ctx.fail("shape ", ints_to_string(target), " copies dim ", i, " (0) but the input ",
                 x.shape.to_string(), " has rank ", x.shape.rank());
      dims[i] = x.shape[i];
    } else if (s < 0) {
      ctx.fail("shape ", ints_to_string(target), " has an invalid dim ", s);
    } else {
      dims[i] = s;
      has_zero = has_zero || s == 0;
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    ctx.fail("shape ", ints_to_string(target), " has both 0 and -1 with allowzero=1");
  if (!x.shape.is_static()) return {TensorType{x.dtype, Shape(std::move(dims))}};

  int64_t n = 1;
  for (int64_t d : x.shape) n = mul_or_fail(ctx, n, d);
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i)
    if (static_cast<int>(i) != infer_at) known = mul_or_fail(ctx, known, dims[i]);
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      ctx.fail("cannot reshape ", x.shape.to_string(), " (", n, " elements) to ",
               ints_to_string(target), ": the -1 cannot be inferred");
    dims[infer_at] = n / known;
  } else if (known != n) {
    ctx.fail("cannot reshape ", x.shape.to_string(), " (", n, " elements) to ",
             Shape(dims).to_string(), " (", known, " elements)");
  }
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_transpose(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const size_t rank = x.shape.rank();
  std::vector<int64_t> reversed(rank);
  for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
  const std::vector<int64_t> perm = ctx.attrs.get_ints("perm", reversed);
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank) && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  if (!valid)
    ctx.fail("perm ", ints_to_string(perm), " is not a permutation of the ", rank,
             " dims of input ", x.shape.to_string());
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = x.shape[perm[i]];
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_concat(const InferContext &ctx) {
  if (!ctx.attrs.has("axis")) ctx.fail("attribute axis is required");
  const TensorType &first = ctx.input(0);
  const auto rank = static_cast<int64_t>(first.shape.rank());
  const int64_t axis_attr = ctx.attrs.get_int("axis", 0);
  if (axis_attr < -rank || axis_attr >= rank)
    ctx.fail("axis ", axis_attr, " is out of range for rank ", rank, " (input 0 has shape ",
             first.shape.to_string(), ")");
  const auto axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  std::vector<int64_t> dims = first.shape.dims();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const TensorType &t = ctx.input(i);
    if (t.dtype != first.dtype)
      ctx.fail("all inputs must have the same dtype: input 0 is ", dtype_name(first.dtype),
               ", input ", i, " is ", dtype_name(t.dtype));
    if (t.shape.rank() != first.shape.rank())
      ctx.fail("all inputs must have the same rank: input 0 has shape ", first.shape.to_string(),
               ", input ", i, " has shape ", t.shape.to_string());
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t v = t.shape[d];
      if (d == axis) {
        if (dims[d] == kUnknownDim || v == kUnknownDim) {
          dims[d] = kUnknownDim;
        } else if (__builtin_add_overflow(dims[d], v, &dims[d])) {
          ctx.fail("concatenated dim overflows int64");
        }
      } else if (dims[d] == kUnknownDim) {
        dims[d] = v;
      } else if (v != kUnknownDim && v != dims[d]) {
        ctx.fail("inputs must match except on axis ", axis, ": input 0 has shape ",
                 first.shape.to_string(), ", input ", i, " has shape ", t.shape.to_string());
      }
    }
  }
  return {TensorType{first.dtype, Shape(std::move(dims))}};
}

// Axes from input `index` when present (deferring when its values are not known yet), else from
// attribute "axes"; nullopt when neither is given.
std::optional<std::vector<int64_t>> axes_input_or_attr(const InferContext &ctx, size_t index,
                                                       DType out) {
  if (ctx.has_input(index)) {
    const auto values = ctx.int_values(index);
    if (!values) ctx.defer({out});
    return values;
  }
  if (ctx.attrs.has("axes")) return ctx.attrs.get_ints("axes", {});
  return std::nullopt;
}

int64_t normalize(const InferContext &ctx, int64_t axis, int64_t rank, const Shape &shape) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis ", axis, " is out of range for rank ", rank, " (input shape ", shape.to_string(),
             ")");
  return axis < 0 ? axis + rank : axis;
}

std::vector<TensorType> infer_squeeze(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto axes = axes_input_or_attr(ctx, 1, x.dtype);
  const auto rank = static_cast<int64_t>(x.shape.rank());
  std::set<int64_t> removed;
  if (axes && !axes->empty()) {
    for (int64_t a : *axes) {
      const int64_t axis = normalize(ctx, a, rank, x.shape);
      if (x.shape[axis] != 1)
        ctx.fail("cannot squeeze axis ", a, " of size ", x.shape[axis], " (input shape ",
                 x.shape.to_string(), ")");
      removed.insert(axis);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      if (x.shape[i] == 1) removed.insert(i);
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i)
    if (!removed.count(i)) dims.push_back(x.shape[i]);
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_unsqueeze(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto axes = axes_input_or_attr(ctx, 1, x.dtype);
  if (!axes) ctx.fail("axes (attribute or input 1) is required");
  const auto out_rank = static_cast<int64_t>(x.shape.rank() + axes->size());
  std::set<int64_t> inserted;
  for (int64_t a : *axes) {
    if (a < -out_rank || a >= out_rank)
      ctx.fail("axis ", a, " is out of range for output rank ", out_rank);
    if (!inserted.insert(a < 0 ? a + out_rank : a).second)
      ctx.fail("axis ", a, " is repeated in axes ", ints_to_string(*axes));
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) dims.push_back(inserted.count(i) ? 1 : x.shape[next++]);
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_flatten(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const auto rank = static_cast<int64_t>(x.shape.rank());
  const int64_t axis_attr = ctx.attrs.get_int("axis", 1);
  if (axis_attr < -rank || axis_attr > rank)
    ctx.fail("axis ", axis_attr, " is out of range for input ", x.shape.to_string());
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t &p = i < axis ? rows : cols;
    p = mul_dims(ctx, p, x.shape[i]);
  }
  return {TensorType{x.dtype, Shape{rows, cols}}};
}

std::vector<TensorType> infer_shape(const InferContext &ctx) {
  const auto n = static_cast<int64_t>(shape_op_dims(ctx.input(0).shape, ctx.attrs).size());
  return {TensorType{DType::Int64, Shape{n}}};
}

std::vector<TensorType> infer_size(const InferContext &) {
  return {TensorType{DType::Int64, Shape{}}};
}

std::vector<TensorType> infer_constant_of_shape(const InferContext &ctx) {
  DType dtype = DType::Float32;
  if (const Tensor *v = ctx.attrs.get_tensor("value")) {
    if (v->numel() != 1) ctx.fail("value must hold one element, got ", v->shape().to_string());
    dtype = v->dtype();
  }
  const TensorType &s = ctx.input(0);
  if (s.dtype != DType::Int64 && s.dtype != DType::Int32)
    ctx.fail("shape must be int64, got ", dtype_name(s.dtype));
  if (s.shape.rank() != 1) ctx.fail("shape must be 1-D, got ", s.shape.to_string());
  const auto dims = ctx.int_values(0);
  if (!dims) ctx.defer({dtype});
  int64_t n = 1;
  for (int64_t d : *dims) {
    if (d < 0) ctx.fail("negative dimension ", d, " in shape ", ints_to_string(*dims));
    n = mul_or_fail(ctx, n, d);
  }
  return {TensorType{dtype, Shape(*dims)}};
}

LUMEN_REGISTER_OP({.name = "reshape", .max_inputs = 2, .infer = infer_reshape, .view = true});
LUMEN_REGISTER_OP({.name = "squeeze", .max_inputs = 2, .infer = infer_squeeze, .view = true});
LUMEN_REGISTER_OP({.name = "unsqueeze", .max_inputs = 2, .infer = infer_unsqueeze, .view = true});
LUMEN_REGISTER_OP({.name = "flatten", .infer = infer_flatten, .view = true});
LUMEN_REGISTER_OP({.name = "shape", .infer = infer_shape});
LUMEN_REGISTER_OP({.name = "size", .infer = infer_size});
LUMEN_REGISTER_OP({.name = "constant_of_shape", .infer = infer_constant_of_shape});
LUMEN_REGISTER_OP({.name = "transpose", .infer = infer_transpose});
LUMEN_REGISTER_OP({.name = "concat", .min_inputs = 1, .max_inputs = 1024, .infer = infer_concat});

}  // namespace

std::vector<int64_t> shape_op_dims(const Shape &shape, const Attributes &attrs) {
  const auto rank = static_cast<int64_t>(shape.rank());
  int64_t start = attrs.get_int("start", 0), end = attrs.get_int("end", rank);
  start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
  end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
  return {shape.dims().begin() + start, shape.dims().begin() + std::max(start, end)};
}

std::optional<Tensor> shape_query_value(std::string_view op, const Shape &shape,
                                        const Attributes &attrs) {
  if (op == "size") return Tensor::from_vector<int64_t>({}, {shape.numel()});
  if (op != "shape") return std::nullopt;
  const std::vector<int64_t> dims = shape_op_dims(shape, attrs);
  return Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(dims.size())}, dims);
}

}  // namespace lumen
