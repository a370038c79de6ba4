// Attention on CUDA (attention.cu), float32: rank 3 or 4, packed QKV, grouped-query heads, a bool
// or float mask, causal, softcap and sliding windows. A KV cache (past_key/past_value),
// nonpad_kv_seqlen and the present_* / qk_matmul_output outputs stay on the CPU (SupportsFn).
#include <cmath>

#include "backends/common/attention_dims.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

std::string limits(const NodeQuery &node) {
  for (size_t i = 4; i < node.inputs.size(); ++i)
    if (node.inputs[i].present) return "a KV cache or nonpad_kv_seqlen input";
  for (size_t i = 1; i < node.outputs_used.size(); ++i)
    if (node.outputs_used[i]) return "the present_key/present_value/qk_matmul_output outputs";
  if (node.inputs.size() > 3 && node.inputs[3].present && node.inputs[3].dtype != DType::Float32 &&
      node.inputs[3].dtype != DType::Bool)
    return str("a ", dtype_name(node.inputs[3].dtype), " mask");
  return "";
}

void attention(KernelContext &ctx) {
  const AttentionDims dims = attention_dims(ctx);
  AttentionParams p;
  p.batch = dims.batch, p.q_heads = dims.q_heads, p.kv_heads = dims.kv_heads;
  p.q_seq = dims.q_seq, p.kv_seq = dims.kv_seq, p.dk = dims.key_size, p.dv = dims.value_size;
  if (p.dv > kMaxAttentionValueSize)
    ctx.fail("value heads of ", p.dv, " (the CUDA kernel takes up to ", kMaxAttentionValueSize,
             ")");
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads)
    ctx.fail(p.q_heads, " query heads do not share ", p.kv_heads, " key/value heads evenly");
  p.q = device_data(ctx.input(0)) + dims.q_col;
  p.k = device_data(ctx.input(1)) + dims.k_col;
  p.v = device_data(ctx.input(2)) + dims.v_col;
  p.y = device_data(ctx.output(0));
  // Strides of (batch, head, position); the head's elements are contiguous.
  const auto strides = [&](int64_t(&s)[3], int64_t heads, int64_t seq, int64_t size, int64_t row) {
    if (dims.rank3)
      s[0] = seq * row, s[1] = size, s[2] = row;
    else
      s[0] = heads * seq * size, s[1] = seq * size, s[2] = size;
  };
  strides(p.q_stride, p.q_heads, p.q_seq, p.dk, dims.q_row);
  strides(p.k_stride, p.kv_heads, p.kv_seq, p.dk, dims.k_row);
  strides(p.v_stride, p.kv_heads, p.kv_seq, p.dv, dims.v_row);
  strides(p.y_stride, p.q_heads, p.q_seq, p.dv, p.q_heads * p.dv);
  if (ctx.has_input(3)) {
    const Tensor &m = ctx.input(3);
    if (m.rank() > 4) ctx.fail("a mask of rank ", m.rank(), " (at most 4)");
    p.mask = m.raw_data();
    p.mask_bool = m.dtype() == DType::Bool;
    for (size_t i = 0; i < m.rank(); ++i) p.mask_dims[4 - m.rank() + i] = m.shape()[i];
  }
  p.scale = static_cast<float>(ctx.attrs.has("scale") ? ctx.attrs.get_float("scale", 1.0)
                                                      : 1.0 / std::sqrt(static_cast<double>(p.dk)));
  p.softcap = static_cast<float>(ctx.attrs.get_float("softcap", 0.0));
  p.causal = ctx.attrs.get_int("is_causal", 0) != 0;
  p.left_window = ctx.attrs.get_int("left_window_size", -1);
  p.right_window = ctx.attrs.get_int("right_window_size", -1);
  check_launch(ctx, launch_attention(p, stream_of(ctx)));
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "attention", attention, DType::Float32);
LUMEN_REGISTER_SUPPORTS("cuda", "attention", limits, DType::Float32);

}  // namespace lumen::cuda
