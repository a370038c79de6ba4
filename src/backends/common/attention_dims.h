// The sizes of an attention call (ONNX Attention) from its Q, K and V: rank 4 [B, heads, S, D],
// or rank 3 [B, S, heads * D] with the q_num_heads and kv_num_heads attributes. Inference has
// checked the shapes; every attention kernel reads them the same way.
#pragma once

#include <cstdint>

#include "core/kernel.h"

namespace lumen {

struct AttentionDims {
  bool rank3;
  int64_t batch, q_heads, kv_heads, q_seq, kv_seq, key_size, value_size;
};

inline AttentionDims attention_dims(const KernelContext &ctx) {
  const Shape &q = ctx.input(0).shape(), &k = ctx.input(1).shape(), &v = ctx.input(2).shape();
  if (q.rank() == 3) {
    const int64_t hkv = ctx.attrs.get_int("kv_num_heads", 1);
    return {true,       q[0],      ctx.attrs.get_int("q_num_heads", 1), hkv, q[1], k[1],
            k[2] / hkv, v[2] / hkv};
  }
  return {false, q[0], q[1], k[1], q[2], k[2], k[3], v[3]};
}

}  // namespace lumen
