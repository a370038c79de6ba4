// rotary_embedding (ONNX RotaryEmbedding 23): rotates pairs of features by position-dependent
// angles given as cos/sin caches.
//   inputs: x [B, H, S, D] or [B, S, H * D] (float; the 3-D form needs num_heads), cos_cache and
//     sin_cache ([P, rd / 2] indexed by position_ids, or [B, S, rd / 2] without them),
//     position_ids (optional, int64 [B, S]).
//   attrs: interleaved 0|1 (pairs (2j, 2j+1) instead of (j, j + rd/2)), rotary_embedding_dim rd
//     (0: the head size), num_heads.
//   output: like x.
// rotate_half_mix (created by recognize_rotary): x * cos + rotate_half(x) * sin, the form torch
// models write rotary embeddings in, with rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]).
//   inputs: x [..., D] (float, D even), cos and sin of one shape [..., D] broadcasting to x over
//     the leading dims (numpy rules; x's shape is the output's).
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

std::vector<TensorType> infer_rotary(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &cos = ctx.input(1), &sin = ctx.input(2);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (cos.dtype != x.dtype || sin.dtype != x.dtype)
    ctx.fail("cos_cache and sin_cache must have the dtype of the input (", dtype_name(x.dtype),
             "), got ", dtype_name(cos.dtype), " and ", dtype_name(sin.dtype));
  const size_t rank = x.shape.rank();
  if (rank != 3 && rank != 4) ctx.fail("input must be 3-D or 4-D, got ", x.shape.to_string());
  const int64_t num_heads = ctx.attrs.get_int("num_heads", 0);
  if (num_heads < 0) ctx.fail("num_heads must be >= 0, got ", num_heads);
  if (rank == 3 && num_heads == 0) ctx.fail("a 3-D input needs the num_heads attribute");
  int64_t head = kUnknownDim;
  if (rank == 4) {
    head = x.shape[3];
  } else if (x.shape[2] != kUnknownDim) {
    if (x.shape[2] % num_heads != 0)
      ctx.fail("hidden size ", x.shape[2], " is not a multiple of num_heads ", num_heads);
    head = x.shape[2] / num_heads;
  }
  const int64_t rd_attr = ctx.attrs.get_int("rotary_embedding_dim", 0);
  if (rd_attr < 0) ctx.fail("rotary_embedding_dim must be >= 0, got ", rd_attr);
  const int64_t rd = rd_attr == 0 ? head : rd_attr;
  if (head != kUnknownDim && (rd > head || rd % 2 != 0))
    ctx.fail("rotary_embedding_dim ", rd, " must be even and <= the head size ", head);
  const bool has_pos = ctx.has_input(3);
  if (has_pos) {
    const TensorType &p = ctx.input(3);
    if (p.dtype != DType::Int64 && p.dtype != DType::Int32)
      ctx.fail("position_ids must be int64, got ", dtype_name(p.dtype));
    if (p.shape.rank() != 2) ctx.fail("position_ids must be 2-D, got ", p.shape.to_string());
  }
  for (const TensorType *c : {&cos, &sin}) {
    if (c->shape != cos.shape)
      ctx.fail("cos_cache ", cos.shape.to_string(), " and sin_cache ", sin.shape.to_string(),
               " differ");
    if (c->shape.rank() != (has_pos ? 2u : 3u) && c->shape.rank() != 2)
      ctx.fail("caches must be ", has_pos ? "2-D" : "3-D", ", got ", c->shape.to_string());
    const int64_t last = c->shape[c->shape.rank() - 1];
    if (rd != kUnknownDim && last != kUnknownDim && last != rd / 2)
      ctx.fail("the caches' last dim ", last, " must be rotary_embedding_dim / 2 = ", rd / 2);
  }
  return {{x.dtype, x.shape}};
}

LUMEN_REGISTER_OP(
    {.name = "rotary_embedding", .min_inputs = 3, .max_inputs = 4, .infer = infer_rotary});

std::vector<TensorType> infer_rotate_half_mix(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &cos = ctx.input(1), &sin = ctx.input(2);
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (float32 or float64)");
  if (cos.dtype != x.dtype || sin.dtype != x.dtype || cos.shape != sin.shape)
    ctx.fail("cos ", cos.shape.to_string(), " and sin ", sin.shape.to_string(),
             " must have one shape and the input's dtype");
  const size_t rank = x.shape.rank();
  if (rank < 1 || cos.shape.rank() < 1 || cos.shape.rank() > rank)
    ctx.fail("cos ", cos.shape.to_string(), " must broadcast to the input ", x.shape.to_string());
  const int64_t d = x.shape[rank - 1];
  if (d != kUnknownDim && d % 2 != 0) ctx.fail("the last dim ", d, " must be even");
  for (size_t i = 0; i < cos.shape.rank(); ++i) {
    const int64_t c = cos.shape[cos.shape.rank() - 1 - i], v = x.shape[rank - 1 - i];
    const bool last = i == 0;
    if (c != kUnknownDim && v != kUnknownDim && c != v && (last || c != 1))
      ctx.fail("cos ", cos.shape.to_string(), " does not broadcast to the input ",
               x.shape.to_string(), last ? " (the last dims must be equal)" : "");
  }
  return {{x.dtype, x.shape}};
}

LUMEN_REGISTER_OP(
    {.name = "rotate_half_mix", .min_inputs = 3, .max_inputs = 3, .infer = infer_rotate_half_mix});

// bit_cast (ONNX BitCast 26): reinterprets the bytes of x as dtype `to` (a dtype name) of the same
// size; the shape is unchanged.
std::vector<TensorType> infer_bit_cast(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const DType to = dtype_from_name(ctx.attrs.get_string("to", ""));
  if (dtype_size(to) != dtype_size(x.dtype))
    ctx.fail("cannot bit-cast ", dtype_name(x.dtype), " (", dtype_size(x.dtype) * 8, " bits) to ",
             dtype_name(to), " (", dtype_size(to) * 8, " bits): the sizes differ");
  return {{to, x.shape}};
}

LUMEN_REGISTER_OP({.name = "bit_cast", .infer = infer_bit_cast});

// swiglu (ONNX SwiGLU 28): y = a * sigmoid(alpha * a) * b for a and b of one shape and dtype.
std::vector<TensorType> infer_swiglu(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  if (!is_float(a.dtype))
    ctx.fail("input dtype ", dtype_name(a.dtype), " is not supported (floating point only)");
  if (a.dtype != b.dtype)
    ctx.fail("inputs must have one dtype, got ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  if (a.shape.rank() != b.shape.rank())
    ctx.fail("inputs must have one shape, got ", a.shape.to_string(), " and ", b.shape.to_string());
  Shape out = a.shape;
  for (size_t i = 0; i < out.rank(); ++i) {
    if (out[i] == kUnknownDim) out[i] = b.shape[i];
    if (out[i] != kUnknownDim && b.shape[i] != kUnknownDim && out[i] != b.shape[i])
      ctx.fail("inputs must have one shape, got ", a.shape.to_string(), " and ",
               b.shape.to_string());
  }
  return {{a.dtype, out}};
}

LUMEN_REGISTER_OP({.name = "swiglu", .min_inputs = 2, .max_inputs = 2, .infer = infer_swiglu});

}  // namespace
}  // namespace lumen
