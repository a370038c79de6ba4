// Data-movement ops of any dtype: reshape (attr shape, allowzero), transpose (attr perm) and
// concat (variadic, attr axis). Attribute semantics follow ONNX.
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

// "[2, -1, 0]": the attribute as written (Shape::to_string would print -1 as "?").
std::string ints_to_string(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t mul_or_fail(const InferContext &ctx, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail("element count overflows int64");
  return r;
}

// shape: one -1 is inferred from the element count; 0 copies the input's dim at that index unless
// allowzero=1, when it is a real zero (and then -1 may not appear with it, as in ONNX).
std::vector<TensorType> infer_reshape(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!ctx.attrs.has("shape")) ctx.fail("attribute shape is required");
  const std::vector<int64_t> target = ctx.attrs.get_ints("shape", {});
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

LUMEN_REGISTER_OP({.name = "reshape", .infer = infer_reshape});
LUMEN_REGISTER_OP({.name = "transpose", .infer = infer_transpose});
LUMEN_REGISTER_OP({.name = "concat", .min_inputs = 1, .max_inputs = 1024, .infer = infer_concat});

}  // namespace
}  // namespace lumen
