// Matrix products: "matmul" (NumPy semantics, batched with broadcasting) and "gemm" (ONNX Gemm:
// alpha * op(A) * op(B) + beta * C, 2-D only).
#include <algorithm>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

void check_float_dtypes(const InferContext &ctx, const TensorType &a, const TensorType &b) {
  if (a.dtype != DType::Float32 && a.dtype != DType::Float64 && a.dtype != DType::Float16 &&
      a.dtype != DType::BFloat16)
    ctx.fail("expected float32, float64, float16 or bfloat16 inputs, got ", dtype_name(a.dtype));
  if (b.dtype != a.dtype)
    ctx.fail("inputs must have the same dtype, got ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
}

// One broadcast dimension; unknown dims (kUnknownDim) stay unknown unless the other side fixes
// them. Returns false when the two known dims are incompatible.
bool broadcast_dim(int64_t a, int64_t b, int64_t &out) {
  if (a == b)
    out = a;
  else if (a == 1)
    out = b;
  else if (b == 1)
    out = a;
  else if (a == kUnknownDim)
    out = b;
  else if (b == kUnknownDim)
    out = a;
  else
    return false;
  return true;
}

std::vector<TensorType> infer_matmul(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  check_float_dtypes(ctx, a, b);
  if (a.shape.rank() == 0 || b.shape.rank() == 0)
    ctx.fail("operands must have rank >= 1, got shapes ", a.shape.to_string(), " and ",
             b.shape.to_string());
  const size_t ra = a.shape.rank(), rb = b.shape.rank();
  // NumPy: a 1-D A is a row vector [1, K], a 1-D B a column vector [K, 1]; the added dim is
  // removed from the result.
  const int64_t ka = a.shape[ra - 1];
  const int64_t kb = rb == 1 ? b.shape[0] : b.shape[rb - 2];
  if (ka != kb && ka != kUnknownDim && kb != kUnknownDim)
    ctx.fail("inner dimensions do not match: A ", a.shape.to_string(), " @ B ", b.shape.to_string(),
             " (", ka, " vs ", kb, ")");
  const size_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
  const size_t batch_rank = std::max(ba, bb);
  std::vector<int64_t> dims(batch_rank);
  for (size_t i = 0; i < batch_rank; ++i) {
    const int64_t da = i < batch_rank - ba ? 1 : a.shape[i - (batch_rank - ba)];
    const int64_t db = i < batch_rank - bb ? 1 : b.shape[i - (batch_rank - bb)];
    if (!broadcast_dim(da, db, dims[i]))
      ctx.fail("batch dimensions do not broadcast: A ", a.shape.to_string(), " @ B ",
               b.shape.to_string());
  }
  if (ra >= 2) dims.push_back(a.shape[ra - 2]);
  if (rb >= 2) dims.push_back(b.shape[rb - 1]);
  return {{a.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_gemm(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  check_float_dtypes(ctx, a, b);
  if (a.shape.rank() != 2 || b.shape.rank() != 2)
    ctx.fail("A and B must be 2-D, got shapes ", a.shape.to_string(), " and ", b.shape.to_string());
  const bool trans_a = ctx.attrs.get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs.get_int("transB", 0) != 0;
  ctx.attrs.get_float("alpha", 1.0);  // type-checks the attributes here rather than at run time
  ctx.attrs.get_float("beta", 1.0);
  const int64_t m = trans_a ? a.shape[1] : a.shape[0];
  const int64_t ka = trans_a ? a.shape[0] : a.shape[1];
  const int64_t kb = trans_b ? b.shape[1] : b.shape[0];
  const int64_t n = trans_b ? b.shape[0] : b.shape[1];
  if (ka != kb && ka != kUnknownDim && kb != kUnknownDim)
    ctx.fail("inner dimensions do not match: A ", a.shape.to_string(), (trans_a ? "^T" : ""),
             " @ B ", b.shape.to_string(), (trans_b ? "^T" : ""), " (", ka, " vs ", kb, ")");
  if (ctx.has_input(2)) {
    const TensorType &c = ctx.input(2);
    if (c.dtype != a.dtype)
      ctx.fail("C must have the dtype of A (", dtype_name(a.dtype), "), got ", dtype_name(c.dtype));
    // Unidirectional broadcast of C to [M, N]: rank <= 2, each dim 1 or equal to the target.
    bool ok = c.shape.rank() <= 2;
    const int64_t target[2] = {m, n};
    for (size_t i = 0; ok && i < c.shape.rank(); ++i) {
      const int64_t d = c.shape[i], t = target[2 - c.shape.rank() + i];
      ok = d == 1 || d == t || d == kUnknownDim || t == kUnknownDim;
    }
    if (!ok)
      ctx.fail("C of shape ", c.shape.to_string(), " does not broadcast to the output [", m, ", ",
               n, "]");
  }
  return {{a.dtype, Shape{m, n}}};
}

LUMEN_REGISTER_OP({.name = "matmul", .min_inputs = 2, .max_inputs = 2, .infer = infer_matmul});
LUMEN_REGISTER_OP({.name = "gemm", .min_inputs = 2, .max_inputs = 3, .infer = infer_gemm});

}  // namespace
}  // namespace lumen
