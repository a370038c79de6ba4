// Normalization ops that compute their statistics from the input, ONNX semantics.
//   layer_norm (LayerNormalization): x, scale, bias (optional); attrs axis=-1, epsilon=1e-5.
//     Normalizes over dims [axis, rank); scale and bias broadcast to x. Outputs y, mean and
//     inv_std_dev (x's shape with dims [axis, rank) set to 1; float32 unless stash_type != 1, then
//     x's dtype).
//   rms_norm (RMSNormalization): x, scale; attrs axis=-1, epsilon=1e-5.
//     y = x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale.
//   instance_norm (InstanceNormalization): x [N, C, ...], scale [C], bias [C]; epsilon=1e-5.
//   group_norm (GroupNormalization): x [N, C, ...], scale, bias; attrs num_groups (required,
//     divides C), epsilon=1e-5, scale_per_group=0 (1: scale/bias are [num_groups], opset 18;
//     0: [C], opset 21).
//   batch_norm_training (BatchNormalization with training_mode=1): x [N, C, ...], scale, bias,
//     input_mean, input_var (each [C]); attrs epsilon=1e-5, momentum=0.9. Normalizes with the
//     batch statistics (mean and population variance over every dim but C); outputs y,
//     running_mean = input_mean * momentum + mean * (1 - momentum), running_var likewise.
//   lp_norm (LpNormalization): x; attrs axis=-1, p=2 (1 or 2). y = x / ||x||_p along axis, 0
//     where the norm is 0.
//   mean_variance_norm (MeanVarianceNormalization): x; attr axes=[0, 2, 3].
//     y = (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over axes.
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool known(int64_t d) {
  return d != kUnknownDim;
}

void check_float(const InferContext &ctx, const TensorType &x, const char *what) {
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64 && x.dtype != DType::Float16 &&
      x.dtype != DType::BFloat16)
    ctx.fail(what, " dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
}

// `p` must broadcast to x without changing x's shape (unidirectional broadcasting).
void check_broadcasts_to(const InferContext &ctx, const TensorType &p, const TensorType &x,
                         const char *what) {
  check_float(ctx, p, what);
  if (p.shape.rank() > x.shape.rank())
    ctx.fail(what, " ", p.shape.to_string(), " has a higher rank than the input ",
             x.shape.to_string());
  const size_t off = x.shape.rank() - p.shape.rank();
  for (size_t i = 0; i < p.shape.rank(); ++i) {
    const int64_t pd = p.shape[i], xd = x.shape[off + i];
    if (known(pd) && known(xd) && pd != 1 && pd != xd)
      ctx.fail(what, " ", p.shape.to_string(), " does not broadcast to the input ",
               x.shape.to_string());
  }
}

// A [C]-shaped per-channel parameter.
void check_channel_param(const InferContext &ctx, size_t i, int64_t c, const char *what,
                         const Shape &x) {
  const TensorType &p = ctx.input(i);
  check_float(ctx, p, what);
  if (p.shape.rank() != 1 || (known(c) && known(p.shape[0]) && p.shape[0] != c))
    ctx.fail(what, " must have shape [", c, "], got ", p.shape.to_string(), " (input ",
             x.to_string(), ")");
}

std::vector<TensorType> infer_layer_norm(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  const size_t axis = x.shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  check_broadcasts_to(ctx, ctx.input(1), x, "scale");
  if (ctx.has_input(2)) check_broadcasts_to(ctx, ctx.input(2), x, "bias");
  Shape stat = x.shape;
  for (size_t d = axis; d < stat.rank(); ++d) stat[d] = 1;
  // ONNX's stash_type (default 1 = float32) is the type of mean and inv_std_dev.
  const int64_t stash = ctx.attrs.get_int("stash_type", 1);
  const DType sd = stash == 1 ? DType::Float32 : x.dtype;
  return {x, {sd, stat}, {sd, stat}};
}

std::vector<TensorType> infer_rms_norm(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  x.shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  check_broadcasts_to(ctx, ctx.input(1), x, "scale");
  return {x};
}

std::vector<TensorType> infer_instance_norm(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  if (x.shape.rank() < 2) ctx.fail("input must be [N, C, ...], got ", x.shape.to_string());
  check_channel_param(ctx, 1, x.shape[1], "scale", x.shape);
  check_channel_param(ctx, 2, x.shape[1], "bias", x.shape);
  return {x};
}

std::vector<TensorType> infer_group_norm(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  if (x.shape.rank() < 2) ctx.fail("input must be [N, C, ...], got ", x.shape.to_string());
  if (!ctx.attrs.has("num_groups")) ctx.fail("attribute 'num_groups' is required");
  const int64_t g = ctx.attrs.get_int("num_groups", 0);
  const int64_t c = x.shape[1];
  if (g <= 0) ctx.fail("num_groups must be > 0, got ", g);
  if (known(c) && c % g != 0)
    ctx.fail("num_groups ", g, " does not divide the ", c, " channels of ", x.shape.to_string());
  const int64_t n = ctx.attrs.get_int("scale_per_group", 0) ? g : c;
  check_channel_param(ctx, 1, n, "scale", x.shape);
  check_channel_param(ctx, 2, n, "bias", x.shape);
  return {x};
}

std::vector<TensorType> infer_batch_norm_training(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  if (x.shape.rank() < 2) ctx.fail("input must be [N, C, ...], got ", x.shape.to_string());
  static const char *const kNames[] = {"scale", "bias", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) check_channel_param(ctx, i, x.shape[1], kNames[i - 1], x.shape);
  const TensorType stat{x.dtype, Shape{x.shape[1]}};
  return {x, stat, stat};
}

std::vector<TensorType> infer_lp_norm(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  x.shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  const int64_t p = ctx.attrs.get_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got ", p);
  return {x};
}

std::vector<TensorType> infer_mvn(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  check_float(ctx, x, "input");
  std::vector<bool> seen(x.shape.rank());
  for (int64_t a : ctx.attrs.get_ints("axes", {0, 2, 3})) {
    const size_t na = x.shape.normalize_axis(a, "axes");
    if (seen[na]) ctx.fail("axes has a repeated axis ", a);
    seen[na] = true;
  }
  return {x};
}

LUMEN_REGISTER_OP({.name = "layer_norm",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .num_outputs = 3,
                   .infer = infer_layer_norm});
LUMEN_REGISTER_OP({.name = "rms_norm", .min_inputs = 2, .max_inputs = 2, .infer = infer_rms_norm});
LUMEN_REGISTER_OP(
    {.name = "instance_norm", .min_inputs = 3, .max_inputs = 3, .infer = infer_instance_norm});
LUMEN_REGISTER_OP(
    {.name = "group_norm", .min_inputs = 3, .max_inputs = 3, .infer = infer_group_norm});
LUMEN_REGISTER_OP({.name = "batch_norm_training",
                   .min_inputs = 5,
                   .max_inputs = 5,
                   .num_outputs = 3,
                   .infer = infer_batch_norm_training});
LUMEN_REGISTER_OP({.name = "lp_norm", .infer = infer_lp_norm});
LUMEN_REGISTER_OP({.name = "mean_variance_norm", .infer = infer_mvn});

}  // namespace
}  // namespace lumen
