// fused_elementwise: a chain of element-wise steps computed in one pass over the output, so the
// intermediates of the chain never go to memory. Built by the fuse_elementwise_chain pass.
//
// Inputs: x0, the chain's main input (float32 or float64; its shape and dtype are the output's),
// then x1..xk, the other operands of binary steps, of x0's dtype and either one element (any rank
// whose broadcast does not grow x0) or exactly x0's shape. The kernels need no broadcasting.
//
// Attributes, one entry per step unless said otherwise:
//   ops            strings: relu sigmoid tanh exp log sqrt neg abs silu gelu leaky_relu clip
//                  hard_sigmoid hard_swish softplus elu erf (unary), add sub mul div maximum
//                  minimum (binary).
//   operands       ints: the input index of a binary step's other operand (0..k; 0 is x0 itself),
//                  -1 for a unary step.
//   running_right  ints (0/1, optional, default 0): 1 when the running value is the right operand,
//                  so step "sub" with operand j computes x_j - value instead of value - x_j.
//   params         floats, two per step (optional, default: each op's ONNX defaults): alpha of
//                  leaky_relu/elu; alpha, beta of hard_sigmoid; min, max of clip (+-inf: no
//                  bound); gelu: 0 for the exact erf form, 1 for the tanh approximation. Ignored
//                  by other ops.
//
// Per element i: v = x0[i]; for each step v = f(v) or f(v, x_j[i or 0]) (f(x_j, v) when
// running_right); y[i] = v. The catalog and decoding live in
// src/graph/ops/fused_elementwise_steps.h, shared with the kernels and the pass.
#include "graph/op_schema.h"
#include "graph/ops/fused_elementwise_steps.h"

namespace lumen {
namespace {

bool is_one_element(const Shape &s) {
  return s.is_static() && s.numel() == 1;
}

// Same rank and every dim equal where both are known (unknown dims are checked at run time).
bool same_shape(const Shape &a, const Shape &b) {
  if (a.rank() != b.rank()) return false;
  for (size_t d = 0; d < a.rank(); ++d)
    if (a[d] != kUnknownDim && b[d] != kUnknownDim && a[d] != b[d]) return false;
  return true;
}

std::vector<TensorType> infer_fused_elementwise(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    ctx.fail("input 0 must be float32 or float64, got ", dtype_name(x.dtype));
  std::vector<fused::Step> steps;
  try {
    steps = fused::decode_steps(ctx.attrs, ctx.num_inputs());
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const TensorType &in = ctx.input(i);
    if (in.dtype != x.dtype)
      ctx.fail("input ", i, " has dtype ", dtype_name(in.dtype), ", expected ", dtype_name(x.dtype),
               " like input 0");
    const bool scalar = is_one_element(in.shape) && in.shape.rank() <= x.shape.rank();
    if (!scalar && !same_shape(in.shape, x.shape))
      ctx.fail("input ", i, " has shape ", in.shape.to_string(),
               "; operands must hold one element or have input 0's shape ", x.shape.to_string());
  }
  return {x};
}

LUMEN_REGISTER_OP({.name = "fused_elementwise",
                   .min_inputs = 1,
                   .max_inputs = 1 << 20,
                   .infer = infer_fused_elementwise,
                   .elementwise = true});

}  // namespace
}  // namespace lumen
