// The sizes of an attention call (ONNX Attention) from its Q, K and V: rank 4 [B, heads, S, D],
// or rank 3 [B, S, heads * D] with the q_num_heads and kv_num_heads attributes, where Q, K and V
// may also be column ranges of one packed [B, S, (q_heads + 2 kv_heads) * D] tensor given as all
// three inputs (attribute qkv_packed, from merge_qkv_projections). Inference has checked the
// shapes; every attention kernel reads them the same way.
#pragma once

#include <cstdint>

#include "core/kernel.h"

namespace lumen {

struct AttentionDims {
  bool rank3;
  int64_t batch, q_heads, kv_heads, q_seq, kv_seq, key_size, value_size;
  // Rank 3: elements from one token's row of Q (K, V) to the next's, and from a row's start to
  // its first head.
  int64_t q_row = 0, k_row = 0, v_row = 0, q_col = 0, k_col = 0, v_col = 0;
};

inline AttentionDims attention_dims(const KernelContext &ctx) {
  const Shape &q = ctx.input(0).shape(), &k = ctx.input(1).shape(), &v = ctx.input(2).shape();
  if (q.rank() != 3) return {false, q[0], q[1], k[1], q[2], k[2], k[3], v[3]};
  const int64_t hq = ctx.attrs.get_int("q_num_heads", 1);
  const int64_t hkv = ctx.attrs.get_int("kv_num_heads", 1);
  if (ctx.attrs.get_int("qkv_packed", 0) != 0) {
    const int64_t row = q[2], d = row / (hq + 2 * hkv);
    return {true, q[0], hq, hkv, q[1], q[1], d, d, row, row, row, 0, hq * d, (hq + hkv) * d};
  }
  return {true, q[0], hq, hkv, q[1], k[1], k[2] / hkv, v[2] / hkv, q[2], k[2], v[2], 0, 0, 0};
}

}  // namespace lumen
