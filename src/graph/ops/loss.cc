// Loss ops: negative_log_likelihood_loss and softmax_cross_entropy_loss (ONNX semantics).
// Inputs: scores [N, C] or [N, C, d1, ...] (float), target [N] or [N, d1, ...] (int32/int64),
// optional weight [C]. Attributes: reduction ("none" | "sum" | "mean", default "mean") and an
// optional ignore_index. Output 0 is the loss: the target's shape for "none", else a scalar.
// softmax_cross_entropy_loss has a second output, the log-probabilities (the input's type).
#include "graph/op_schema.h"

namespace lumen {
namespace {

bool is_loss_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

TensorType infer_loss_common(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const TensorType &t = ctx.input(1);
  if (!is_loss_float(x.dtype))
    ctx.fail("expected a floating-point input, got ", dtype_name(x.dtype));
  if (t.dtype != DType::Int32 && t.dtype != DType::Int64)
    ctx.fail("expected an int32 or int64 target, got ", dtype_name(t.dtype));
  if (x.shape.rank() < 2)
    ctx.fail("expected an input of rank >= 2 ([N, C, ...]), got shape ", x.shape.to_string());
  std::vector<int64_t> expect;
  for (size_t d = 0; d < x.shape.rank(); ++d)
    if (d != 1) expect.push_back(x.shape[d]);
  if (t.shape.dims() != expect)
    ctx.fail("target shape ", t.shape.to_string(), " does not match input shape ",
             x.shape.to_string(), " (expected ", Shape(expect).to_string(), ")");
  if (ctx.has_input(2)) {
    const TensorType &w = ctx.input(2);
    if (w.dtype != x.dtype)
      ctx.fail("weight dtype ", dtype_name(w.dtype), " differs from input dtype ",
               dtype_name(x.dtype));
    if (w.shape.rank() != 1 || w.shape[0] != x.shape[1])
      ctx.fail("expected a weight of shape [", x.shape[1], "], got ", w.shape.to_string());
  }
  const std::string reduction = ctx.attrs.get_string("reduction", "mean");
  if (reduction == "none") return {x.dtype, t.shape};
  if (reduction == "sum" || reduction == "mean") return {x.dtype, Shape{}};
  ctx.fail("unknown reduction '", reduction, "' (expected none, sum or mean)");
}

std::vector<TensorType> infer_nll(const InferContext &ctx) {
  return {infer_loss_common(ctx)};
}

std::vector<TensorType> infer_sce(const InferContext &ctx) {
  return {infer_loss_common(ctx), ctx.input(0)};
}

LUMEN_REGISTER_OP(
    {.name = "negative_log_likelihood_loss", .min_inputs = 2, .max_inputs = 3, .infer = infer_nll});
LUMEN_REGISTER_OP({.name = "softmax_cross_entropy_loss",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .num_outputs = 2,
                   .infer = infer_sce});

}  // namespace
}  // namespace lumen
