// attention (ONNX Attention, opsets 23-25): scaled dot-product attention with optional mask,
// KV cache, grouped-query heads, softcap and sliding windows.
//   inputs: Q, K, V (all rank 3 [B, S, heads * head_size] or all rank 4 [B, heads, S, head_size]),
//     attn_mask (optional; bool or float; broadcast right-aligned to [B, Hq, Sq, total_kv], its
//     last dim may be shorter than total_kv and is then padded with masked positions),
//     past_key [B, Hkv, P, Dk], past_value [B, Hkv, P, Dv] (optional, together),
//     nonpad_kv_seqlen [B] int64 (optional, opset 24+; not with past_key).
//   outputs: Y (Q's layout, head size Dv), present_key [B, Hkv, P + Skv, Dk],
//     present_value [B, Hkv, P + Skv, Dv], qk_matmul_output [B, Hq, Sq, P + Skv].
//   attrs: q_num_heads, kv_num_heads (required for rank 3), scale (default 1/sqrt(Dk)),
//     qkv_packed=0 (Lumen's own, rank 3: Q, K and V are one [B, S, (q_heads + 2 kv_heads) * D]
//     tensor given as all three inputs, Q's heads first, then K's, then V's),
//     is_causal=0, softcap=0, qk_matmul_output_mode=0 (0/1: QK, 2: QK + bias, 3: softmax),
//     softmax_precision (ignored: the reference computes in double), left_window_size=-1,
//     right_window_size=-1.
// Unknown dimensions are accepted and checked only where both sides are known.
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool known(int64_t d) {
  return d != kUnknownDim;
}

int64_t add_dims(int64_t a, int64_t b) {
  return known(a) && known(b) ? checked_add(a, b, "attention sequence length") : kUnknownDim;
}

void check_same(const InferContext &ctx, int64_t a, int64_t b, const char *what, const Shape &sa,
                const Shape &sb) {
  if (known(a) && known(b) && a != b)
    ctx.fail(what, " mismatch: ", a, " vs ", b, " (shapes ", sa.to_string(), " and ",
             sb.to_string(), ")");
}

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

std::vector<TensorType> infer_attention(const InferContext &ctx) {
  const TensorType &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (!is_float(q.dtype))
    ctx.fail("Q dtype ", dtype_name(q.dtype), " is not supported (floating point only)");
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    ctx.fail("Q, K and V must have the same dtype, got ", dtype_name(q.dtype), ", ",
             dtype_name(k.dtype), ", ", dtype_name(v.dtype));
  const size_t rank = q.shape.rank();
  if ((rank != 3 && rank != 4) || k.shape.rank() != rank || v.shape.rank() != rank)
    ctx.fail("Q, K and V must all be rank 3 or all rank 4, got ", q.shape.to_string(), ", ",
             k.shape.to_string(), ", ", v.shape.to_string());
  const int64_t batch = q.shape[0];
  check_same(ctx, batch, k.shape[0], "batch size", q.shape, k.shape);
  check_same(ctx, batch, v.shape[0], "batch size", q.shape, v.shape);
  int64_t hq, hkv, sq, skv, dk, dv;
  if (rank == 3) {
    if (!ctx.attrs.has("q_num_heads") || !ctx.attrs.has("kv_num_heads"))
      ctx.fail("q_num_heads and kv_num_heads are required for rank-3 inputs");
    hq = ctx.attrs.get_int("q_num_heads", 0);
    hkv = ctx.attrs.get_int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0)
      ctx.fail("q_num_heads and kv_num_heads must be > 0, got ", hq, " and ", hkv);
    auto head = [&](int64_t hidden, int64_t heads, const char *what) {
      if (!known(hidden)) return kUnknownDim;
      if (hidden % heads != 0)
        ctx.fail(what, " hidden size ", hidden, " is not divisible by its ", heads, " heads");
      return hidden / heads;
    };
    sq = q.shape[1];
    if (ctx.attrs.get_int("qkv_packed", 0) != 0) {
      // One tensor, given as Q, K and V: Q's heads, then K's, then V's, all of one size.
      for (size_t i = 0; i < 3; ++i) {
        check_same(ctx, q.shape[i], k.shape[i], "packed Q/K dim", q.shape, k.shape);
        check_same(ctx, q.shape[i], v.shape[i], "packed Q/V dim", q.shape, v.shape);
      }
      skv = sq;
      dk = dv = head(q.shape[2], checked_add(hq, checked_mul(2, hkv), "heads"), "packed QKV");
    } else {
      skv = k.shape[1];
      check_same(ctx, skv, v.shape[1], "K/V sequence length", k.shape, v.shape);
      const int64_t dq = head(q.shape[2], hq, "Q");
      dk = head(k.shape[2], hkv, "K");
      dv = head(v.shape[2], hkv, "V");
      check_same(ctx, dq, dk, "Q/K head size", q.shape, k.shape);
    }
  } else {
    if (ctx.attrs.get_int("qkv_packed", 0) != 0) ctx.fail("packed Q/K/V needs rank-3 inputs");
    hq = q.shape[1];
    hkv = k.shape[1];
    check_same(ctx, hkv, v.shape[1], "K/V head count", k.shape, v.shape);
    sq = q.shape[2];
    skv = k.shape[2];
    check_same(ctx, skv, v.shape[2], "K/V sequence length", k.shape, v.shape);
    check_same(ctx, q.shape[3], k.shape[3], "Q/K head size", q.shape, k.shape);
    dk = k.shape[3];
    dv = v.shape[3];
  }
  if (known(hq) && known(hkv) && (hkv == 0 || hq % hkv != 0))
    ctx.fail("q heads (", hq, ") must be a multiple of kv heads (", hkv, ")");

  const int64_t mode = ctx.attrs.get_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) ctx.fail("qk_matmul_output_mode must be 0..3, got ", mode);
  for (const char *w : {"left_window_size", "right_window_size"})
    if (ctx.attrs.get_int(w, -1) < -1) ctx.fail(w, " must be >= -1");

  int64_t past = 0;
  if (ctx.has_input(4) != ctx.has_input(5))
    ctx.fail("past_key and past_value must be given together");
  if (ctx.has_input(4)) {
    const TensorType &pk = ctx.input(4), &pv = ctx.input(5);
    if (pk.dtype != q.dtype || pv.dtype != q.dtype)
      ctx.fail("past_key/past_value must have Q's dtype ", dtype_name(q.dtype));
    if (pk.shape.rank() != 4 || pv.shape.rank() != 4)
      ctx.fail("past_key/past_value must be rank 4 [B, kv_heads, P, head_size], got ",
               pk.shape.to_string(), " and ", pv.shape.to_string());
    check_same(ctx, pk.shape[0], batch, "past_key batch", pk.shape, q.shape);
    check_same(ctx, pv.shape[0], batch, "past_value batch", pv.shape, q.shape);
    check_same(ctx, pk.shape[1], hkv, "past_key heads", pk.shape, k.shape);
    check_same(ctx, pv.shape[1], hkv, "past_value heads", pv.shape, v.shape);
    check_same(ctx, pk.shape[2], pv.shape[2], "past sequence length", pk.shape, pv.shape);
    check_same(ctx, pk.shape[3], dk, "past_key head size", pk.shape, k.shape);
    check_same(ctx, pv.shape[3], dv, "past_value head size", pv.shape, v.shape);
    past = pk.shape[2];
  }
  const int64_t total = add_dims(past, skv);
  if (ctx.has_input(6)) {
    if (ctx.has_input(4)) ctx.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    const TensorType &n = ctx.input(6);
    if (n.dtype != DType::Int64 && n.dtype != DType::Int32)
      ctx.fail("nonpad_kv_seqlen must be int64, got ", dtype_name(n.dtype));
    if (n.shape.rank() != 1)
      ctx.fail("nonpad_kv_seqlen must be 1-D [B], got ", n.shape.to_string());
    check_same(ctx, n.shape[0], batch, "nonpad_kv_seqlen length", n.shape, q.shape);
  }
  if (ctx.has_input(3)) {
    const TensorType &m = ctx.input(3);
    if (m.dtype != DType::Bool && !is_float(m.dtype))
      ctx.fail("attn_mask must be bool or floating point, got ", dtype_name(m.dtype));
    if (m.shape.rank() < 1 || m.shape.rank() > 4)
      ctx.fail("attn_mask must have rank 1 to 4, got ", m.shape.to_string());
    const Shape full{batch, hq, sq, total};
    for (size_t i = 0; i < m.shape.rank(); ++i) {
      const int64_t md = m.shape[m.shape.rank() - 1 - i], fd = full[3 - i];
      if (!known(md) || !known(fd)) continue;
      if (i == 0 ? md > fd : (md != 1 && md != fd))
        ctx.fail("attn_mask ", m.shape.to_string(), " does not broadcast to ", full.to_string(),
                 " (batch, q_heads, q_seq, total_kv_seq)");
    }
  }
  Shape y = rank == 3 ? Shape{batch, sq, known(dv) ? checked_mul(hq, dv) : kUnknownDim}
                      : Shape{batch, hq, sq, dv};
  return {{q.dtype, y},
          {q.dtype, Shape{batch, hkv, total, dk}},
          {q.dtype, Shape{batch, hkv, total, dv}},
          {q.dtype, Shape{batch, hq, sq, total}}};
}

LUMEN_REGISTER_OP({.name = "attention",
                   .min_inputs = 3,
                   .max_inputs = 7,
                   .num_outputs = 4,
                   .infer = infer_attention,
                   .optional_outputs = true});

}  // namespace
}  // namespace lumen
