// Recurrent (linear) attention and its companion causal depthwise convolution, ONNX opset 27.
//   linear_attention (LinearAttention): query [B, T, Hq*dk], key [B, T, Hkv*dk],
//     value [B, T, Hkv*dv], past_state [B, Hkv, dk, dv] (optional), decay [B, T, Hkv or Hkv*dk]
//     (optional), beta [B, T, Hkv or 1] (optional); attrs q_num_heads, kv_num_heads (required,
//     Hq a multiple of Hkv), scale (0: 1/sqrt(dk)), update_rule ("linear", "gated", "delta",
//     "gated_delta" (default)). Gated rules need decay, delta rules need beta; others forbid them.
//     Outputs y [B, T, Hq*dv] (query's dtype) and present_state [B, Hkv, dk, dv] (past_state's
//     dtype, else query's).
//   causal_conv_with_state (CausalConvWithState): input [B, C, L], weight [C, 1, K], bias [C]
//     (optional), past_state [B, C, K-1] (optional, zeros when omitted); attr activation ("none",
//     "silu", "swish"). Depthwise causal conv over [past_state, input]; outputs y [B, C, L] and
//     present_state (the last K-1 positions of [past_state, input]).
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool known(int64_t d) {
  return d != kUnknownDim;
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

void check_float(const InferContext &ctx, size_t i, const char *what) {
  if (!is_float(ctx.input(i).dtype))
    ctx.fail(what, " dtype ", dtype_name(ctx.input(i).dtype),
             " is not supported (floating point only)");
}

void check_rank(const InferContext &ctx, size_t i, size_t rank, const char *what) {
  if (ctx.input(i).shape.rank() != rank)
    ctx.fail(what, " must have rank ", rank, ", got ", ctx.input(i).shape.to_string());
}

void check_dim(const InferContext &ctx, int64_t got, int64_t want, const char *what,
               const Shape &shape) {
  if (known(got) && known(want) && got != want)
    ctx.fail(what, " is ", got, ", expected ", want, " (shape ", shape.to_string(), ")");
}

int64_t split_heads(const InferContext &ctx, int64_t total, int64_t heads, const char *what) {
  if (!known(total)) return kUnknownDim;
  if (total % heads != 0)
    ctx.fail(what, " last dim ", total, " is not divisible by its number of heads ", heads);
  return total / heads;
}

std::vector<TensorType> infer_linear_attention(const InferContext &ctx) {
  const int64_t hq = ctx.attrs.get_int("q_num_heads", 0);
  const int64_t hkv = ctx.attrs.get_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail("q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (", hkv, ")");
  const std::string rule = ctx.attrs.get_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail("update_rule '", rule, "' is not supported (linear, gated, delta, gated_delta)");
  const bool gated = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  const char *names[] = {"query", "key", "value"};
  for (size_t i = 0; i < 3; ++i) {
    check_float(ctx, i, names[i]);
    check_rank(ctx, i, 3, names[i]);
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      ctx.fail(names[i], " dtype ", dtype_name(ctx.input(i).dtype), " differs from query's ",
               dtype_name(ctx.input(0).dtype));
  }
  const Shape &q = ctx.input(0).shape, &k = ctx.input(1).shape, &v = ctx.input(2).shape;
  const int64_t b = q[0], t = q[1];
  for (size_t i = 1; i < 3; ++i) {
    check_dim(ctx, ctx.input(i).shape[0], b, "batch size", ctx.input(i).shape);
    check_dim(ctx, ctx.input(i).shape[1], t, "sequence length", ctx.input(i).shape);
  }
  const int64_t dk = split_heads(ctx, q[2], hq, "query");
  const int64_t kdk = split_heads(ctx, k[2], hkv, "key");
  check_dim(ctx, kdk, dk, "key head size", k);
  const int64_t dv = split_heads(ctx, v[2], hkv, "value");
  if (gated != ctx.has_input(4))
    ctx.fail("update_rule '", rule, "' ", gated ? "requires" : "forbids", " the decay input");
  if (delta != ctx.has_input(5))
    ctx.fail("update_rule '", rule, "' ", delta ? "requires" : "forbids", " the beta input");
  DType state_dtype = ctx.input(0).dtype;
  if (ctx.has_input(3)) {
    check_float(ctx, 3, "past_state");
    check_rank(ctx, 3, 4, "past_state");
    const Shape &s = ctx.input(3).shape;
    check_dim(ctx, s[0], b, "past_state dim 0", s);
    check_dim(ctx, s[1], hkv, "past_state dim 1", s);
    check_dim(ctx, s[2], dk, "past_state dim 2", s);
    check_dim(ctx, s[3], dv, "past_state dim 3", s);
    state_dtype = ctx.input(3).dtype;
  }
  if (gated) {
    check_float(ctx, 4, "decay");
    check_rank(ctx, 4, 3, "decay");
    const Shape &d = ctx.input(4).shape;
    check_dim(ctx, d[0], b, "decay dim 0", d);
    check_dim(ctx, d[1], t, "decay dim 1", d);
    if (known(d[2]) && d[2] != hkv && !(known(dk) && d[2] == hkv * dk))
      ctx.fail("decay last dim ", d[2], " must be kv_num_heads (", hkv, ") or kv_num_heads*dk");
  }
  if (delta) {
    check_float(ctx, 5, "beta");
    check_rank(ctx, 5, 3, "beta");
    const Shape &d = ctx.input(5).shape;
    check_dim(ctx, d[0], b, "beta dim 0", d);
    check_dim(ctx, d[1], t, "beta dim 1", d);
    if (known(d[2]) && d[2] != hkv && d[2] != 1)
      ctx.fail("beta last dim ", d[2], " must be kv_num_heads (", hkv, ") or 1");
  }
  const int64_t yd = known(dv) ? checked_mul(hq, dv) : kUnknownDim;
  return {{ctx.input(0).dtype, Shape{b, t, yd}}, {state_dtype, Shape{b, hkv, dk, dv}}};
}

LUMEN_REGISTER_OP({.name = "linear_attention",
                   .min_inputs = 3,
                   .max_inputs = 6,
                   .num_outputs = 2,
                   .infer = infer_linear_attention});

std::vector<TensorType> infer_causal_conv(const InferContext &ctx) {
  const std::string act = ctx.attrs.get_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    ctx.fail("activation '", act, "' is not supported (none, silu, swish)");
  check_float(ctx, 0, "input");
  check_rank(ctx, 0, 3, "input");
  check_rank(ctx, 1, 3, "weight");
  const Shape &x = ctx.input(0).shape, &w = ctx.input(1).shape;
  for (size_t i = 1; i < 4; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != ctx.input(0).dtype)
      ctx.fail("input ", i, " dtype ", dtype_name(ctx.input(i).dtype), " differs from input's ",
               dtype_name(ctx.input(0).dtype));
  const int64_t c = x[1], kk = w[2];
  check_dim(ctx, w[0], c, "weight dim 0", w);
  check_dim(ctx, w[1], 1, "weight dim 1", w);
  if (known(kk) && kk < 1) ctx.fail("kernel size must be at least 1, got ", w.to_string());
  if (ctx.has_input(2)) {
    check_rank(ctx, 2, 1, "bias");
    check_dim(ctx, ctx.input(2).shape[0], c, "bias dim 0", ctx.input(2).shape);
  }
  const int64_t sk = known(kk) ? kk - 1 : kUnknownDim;
  if (ctx.has_input(3)) {
    check_rank(ctx, 3, 3, "past_state");
    const Shape &s = ctx.input(3).shape;
    check_dim(ctx, s[0], x[0], "past_state dim 0", s);
    check_dim(ctx, s[1], c, "past_state dim 1", s);
    check_dim(ctx, s[2], sk, "past_state dim 2", s);
  }
  const DType dt = ctx.input(0).dtype;
  return {{dt, x}, {dt, Shape{x[0], c, sk}}};
}

LUMEN_REGISTER_OP({.name = "causal_conv_with_state",
                   .min_inputs = 2,
                   .max_inputs = 4,
                   .num_outputs = 2,
                   .infer = infer_causal_conv});

}  // namespace
}  // namespace lumen
