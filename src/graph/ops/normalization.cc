// Normalization ops with fixed statistics, ONNX semantics.
//   batch_norm (BatchNormalization, inference): inputs x [N, C, ...] (rank >= 2), scale, bias,
//     mean, var (each [C]); attr epsilon=1e-5.
//     y = scale * (x - mean) / sqrt(var + epsilon) + bias. Element-wise in x, so it may run in
//     place.
//   lrn (LRN, cross-channel): x [N, C, spatial...] (rank >= 3); attrs size (required, > 0),
//     alpha=1e-4, beta=0.75, bias=1.0. Channel c sums x^2 over channels
//     [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to [0, C - 1];
//     y = x / (bias + alpha / size * square_sum) ^ beta.
// Unknown dimensions (kUnknownDim) are accepted and checked only where both sides are known.
#include <cmath>
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

void check_float_input(const InferContext &ctx, const TensorType &x) {
  if (!computes_in_float(x.dtype))
    ctx.fail("expected a float16, bfloat16, float32 or float64 input, got ", dtype_name(x.dtype));
}

std::vector<TensorType> infer_batch_norm(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float_input(ctx, x);
  if (x.shape.rank() < 2)
    ctx.fail("input must be [N, C, ...] with rank >= 2, got shape ", x.shape.to_string());
  const int64_t channels = x.shape[1];
  static const char *const kNames[] = {"scale", "bias", "mean", "var"};
  for (size_t i = 1; i <= 4; ++i) {
    if (!ctx.has_input(i)) ctx.fail("input ", i, " (", kNames[i - 1], ") is required");
    const TensorType &p = ctx.input(i);
    if (p.dtype != x.dtype)
      ctx.fail(kNames[i - 1], " must have the input's dtype ", dtype_name(x.dtype), ", got ",
               dtype_name(p.dtype));
    if (p.shape.rank() != 1)
      ctx.fail(kNames[i - 1], " must be 1-D [C] with C = ", channels, " (input shape ",
               x.shape.to_string(), "), got shape ", p.shape.to_string());
    if (channels != kUnknownDim && p.shape[0] != kUnknownDim && p.shape[0] != channels)
      ctx.fail(kNames[i - 1], " has ", p.shape[0], " elements but the input has C = ", channels,
               " channels (input shape ", x.shape.to_string(), ", ", kNames[i - 1], " shape ",
               p.shape.to_string(), ")");
  }
  const double epsilon = ctx.attrs.get_float("epsilon", 1e-5);
  if (!(epsilon >= 0)) ctx.fail("attribute epsilon must be >= 0, got ", epsilon);
  if (ctx.attrs.get_int("training_mode", 0) != 0)
    ctx.fail("training_mode is not supported (inference only)");
  return {x};
}

std::vector<TensorType> infer_lrn(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float_input(ctx, x);
  if (x.shape.rank() < 3)
    ctx.fail("input must be [N, C, spatial...] with rank >= 3, got shape ", x.shape.to_string());
  if (!ctx.attrs.has("size")) ctx.fail("attribute 'size' is required");
  const int64_t size = ctx.attrs.get_int("size", 0);
  if (size <= 0) ctx.fail("attribute 'size' must be > 0, got ", size);
  const double alpha = ctx.attrs.get_float("alpha", 1e-4);
  const double beta = ctx.attrs.get_float("beta", 0.75);
  const double bias = ctx.attrs.get_float("bias", 1.0);
  if (std::isnan(alpha) || std::isnan(beta) || std::isnan(bias))
    ctx.fail("attributes alpha, beta and bias must not be NaN");
  return {x};
}

LUMEN_REGISTER_OP({.name = "batch_norm",
                   .min_inputs = 5,
                   .max_inputs = 5,
                   .infer = infer_batch_norm,
                   .elementwise = true});
LUMEN_REGISTER_OP({.name = "lrn", .infer = infer_lrn});

}  // namespace
}  // namespace lumen
