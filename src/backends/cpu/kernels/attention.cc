// CPU attention (float32): ONNX Attention in one pass, as FlashAttention computes it. Work items
// are (batch, query head, block of query rows); each walks the keys in blocks: S = Q K^T for the
// block (the CPU GEMM on the calling thread), scaled, soft-capped and biased (mask, causal, sliding
// window, padding), then folded into running row maxima and sums (online softmax) and O += P V.
// Neither the score matrix nor K^T is ever materialized whole, so long sequences stay in cache,
// and key blocks that causality masks for every row of an item are skipped. Grouped-query heads
// read their shared K/V head in place (no expand). Rows whose every key is masked give zeros, as
// the ONNX definition does. Shapes were checked by inference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/common/activation_functors.h"
#include "backends/common/attention_dims.h"
#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/row_reductions.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Query rows per GEMM: about 64, a multiple of the micro-kernel's rows (64 rows of 12-row tiles
// ended on a 4-row one, 5% of the time at 512 tokens).
int64_t query_block(int mr) {
  return std::max<int64_t>(mr, 64 / mr * mr);
}
// Query rows per work item (its packed keys shared by its query blocks), at least: whole query
// blocks from there. Every item packs all of its head's keys, so 4 x 60 rows (512 tokens in 3
// items a head) took 1.16x the time of 5 x 60 (2 items).
constexpr int64_t kQueryChunk = 256;
constexpr int64_t kKeyBlock = 256;  // keys per block of the online softmax

// Where the rows of one head lie: row r of head (b, h) starts at base + r * row_stride.
struct HeadLayout {
  const float *data;
  int64_t batch_stride, head_stride, row_stride;
  const float *rows(int64_t b, int64_t h) const {
    return data + b * batch_stride + h * head_stride;
  }
};

// [B, H, S, D] (rank 4), or rank 3: tokens `row` floats apart, the heads from column `col`.
HeadLayout layout_of(const float *data, bool rank3, int64_t heads, int64_t seq, int64_t dim,
                     int64_t row = 0, int64_t col = 0) {
  if (rank3) return {data + col, seq * row, dim, row};
  return {data, heads * seq * dim, seq * dim, dim};
}

// Present K or V, [B, Hkv, past + S, D]: the past rows followed by the new ones.
void write_present(ThreadPool &pool, const Tensor *past, const HeadLayout &fresh, int64_t batch,
                   int64_t heads, int64_t past_len, int64_t seq, int64_t dim, float *out) {
  const int64_t total = past_len + seq;
  pool.parallel_for(batch * heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / heads, h = bh % heads;
      float *dst = out + bh * total * dim;
      if (past_len > 0)
        std::memcpy(dst, past->data<float>() + bh * past_len * dim,
                    sizeof(float) * size_t(past_len * dim));
      const float *src = fresh.rows(b, h);
      for (int64_t s = 0; s < seq; ++s)
        std::memcpy(dst + (past_len + s) * dim, src + s * fresh.row_stride,
                    sizeof(float) * size_t(dim));
    }
  });
}

struct Masking {
  // attn_mask right-aligned to [B, Hq, Sq, mask_len]: element strides (0 where broadcast).
  const float *values = nullptr;
  const bool *flags = nullptr;
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t mask_len = 0;  // keys past it are masked
  bool causal = false;
  int64_t left = -1, right = -1;  // sliding window, -1: unbounded

  // Keys [lo, hi) that causality, the window, padding (`valid` keys) and the mask's length leave
  // to query row i; `offset` is the query's position minus its row index (the past length).
  std::pair<int64_t, int64_t> key_range(int64_t i, int64_t offset, int64_t valid) const {
    int64_t hi = std::min(valid, values || flags ? mask_len : valid);
    if (causal) hi = std::min(hi, i + offset + 1);
    if (right >= 0) hi = std::min(hi, i + offset + right + 1);
    const int64_t lo = left >= 0 ? std::max<int64_t>(0, i + offset - left) : 0;
    return {lo, std::max(lo, hi)};
  }
};

// Scaled scores of keys [j0, j0 + n) for query row i of head (b, h) to logits in place:
// soft-capped, masked; keys outside [lo, hi) get -inf. Returns the row's maximum.
LUMEN_VEC_INLINE inline float finish_scores(float *s, int64_t n, int64_t j0, const Masking &mask,
                                            int64_t b, int64_t h, int64_t i, int64_t lo, int64_t hi,
                                            float softcap) {
  const int64_t a = std::clamp<int64_t>(lo - j0, 0, n), z = std::clamp<int64_t>(hi - j0, a, n);
  for (int64_t j = 0; j < a; ++j) s[j] = kNegInf;
  for (int64_t j = z; j < n; ++j) s[j] = kNegInf;
  if (softcap > 0)
    for (int64_t j = a; j < z; ++j) s[j] = softcap * std::tanh(s[j] / softcap);
  const int64_t row = b * mask.strides[0] + h * mask.strides[1] + i * mask.strides[2];
  const int64_t step = mask.strides[3];
  if (mask.values) {
    const float *m = mask.values + row + j0 * step;
    if (step == 1)
      for (int64_t j = a; j < z; ++j) s[j] += m[j];
    else
      for (int64_t j = a; j < z; ++j) s[j] += m[0];
  } else if (mask.flags) {
    const bool *m = mask.flags + row + j0 * step;
    for (int64_t j = a; j < z; ++j)
      if (!m[j * step]) s[j] = kNegInf;
  }
  return cpu::row_max(s + a, z - a);
}

void attention_f32(KernelContext &ctx) {
  const Tensor &tq = ctx.input(0), &tk = ctx.input(1), &tv = ctx.input(2);
  // Plain variables, not a structured binding: lambdas capture them (clang before 16 cannot).
  const AttentionDims dims = attention_dims(ctx);
  const bool rank3 = dims.rank3;
  const int64_t batch = dims.batch, hq = dims.q_heads, hkv = dims.kv_heads, sq = dims.q_seq,
                skv = dims.kv_seq, dk = dims.key_size, dv = dims.value_size;
  const bool has_past = ctx.has_input(4);
  const int64_t past = has_past ? ctx.input(4).shape()[2] : 0;
  const int64_t total = past + skv;
  const int64_t group = hq / hkv;
  const int64_t mode = ctx.attrs.get_int("qk_matmul_output_mode", 0);
  Tensor *qk_out = ctx.outputs.size() > 3 ? ctx.outputs[3] : nullptr;

  Masking masking;
  masking.causal = ctx.attrs.get_int("is_causal", 0) != 0;
  masking.left = ctx.attrs.get_int("left_window_size", -1);
  masking.right = ctx.attrs.get_int("right_window_size", -1);
  masking.mask_len = total;
  if (ctx.has_input(3)) {
    const Tensor &m = ctx.input(3);
    if (m.dtype() == DType::Float32)
      masking.values = m.data<float>();
    else if (m.dtype() == DType::Bool)
      masking.flags = m.data<bool>();
    else
      ctx.fail("attn_mask of dtype ", dtype_name(m.dtype()), " with float32 Q is not supported");
    int64_t dims[4] = {1, 1, 1, 1};
    const size_t r = m.shape().rank();
    for (size_t i = 0; i < r; ++i) dims[4 - r + i] = m.shape()[i];
    int64_t stride = 1;
    for (int a = 3; a >= 0; --a) {
      masking.strides[a] = dims[a] == 1 ? 0 : stride;
      stride *= dims[a];
    }
    masking.mask_len = dims[3];
  }
  std::vector<int64_t> nonpad;
  if (ctx.has_input(6)) nonpad = ctx.input_ints(6, "nonpad_kv_seqlen");

  // K and V rows: in place (rank 4 or 3, no past), else the present tensors [B, Hkv, total, D].
  const HeadLayout k_in = layout_of(tk.data<float>(), rank3, hkv, skv, dk, dims.k_row, dims.k_col);
  const HeadLayout v_in = layout_of(tv.data<float>(), rank3, hkv, skv, dv, dims.v_row, dims.v_col);
  HeadLayout keys = k_in, values = v_in;
  Tensor present_k, present_v;
  const bool want_present = ctx.outputs.size() > 1 && ctx.outputs[1];
  if (has_past || want_present) {
    present_k = want_present ? ctx.output(1) : Tensor::empty({batch, hkv, total, dk});
    present_v = ctx.outputs.size() > 2 && ctx.outputs[2] ? ctx.output(2)
                                                         : Tensor::empty({batch, hkv, total, dv});
    write_present(ctx.pool, has_past ? &ctx.input(4) : nullptr, k_in, batch, hkv, past, skv, dk,
                  present_k.data<float>());
    write_present(ctx.pool, has_past ? &ctx.input(5) : nullptr, v_in, batch, hkv, past, skv, dv,
                  present_v.data<float>());
    keys = layout_of(present_k.data<float>(), false, hkv, total, dk);
    values = layout_of(present_v.data<float>(), false, hkv, total, dv);
  }
  const HeadLayout queries = layout_of(tq.data<float>(), rank3, hq, sq, dk, dims.q_row, dims.q_col);
  float *y = ctx.output(0).data<float>();
  const HeadLayout out = layout_of(y, rank3, hq, sq, dv, hq * dv);

  const float scale = ctx.attrs.has("scale") ? float(ctx.attrs.get_float("scale", 1.0))
                                             : float(1.0 / std::sqrt(double(dk)));
  const float softcap = float(ctx.attrs.get_float("softcap", 0.0));
  const cpu::F32GemmMicrokernel &micro = cpu::default_f32_gemm_microkernel();
  const int64_t q_block = query_block(micro.mr);
  // The scores output needs whole rows: one key block then.
  const int64_t key_block = qk_out ? std::max<int64_t>(total, 1) : kKeyBlock;
  // A work item is a chunk of query rows of one head, walked in blocks of q_block rows; its
  // queries (scaled) and each key block are packed once per item and serve all of them. With the
  // scores output, a chunk is one block (its rows' scores are written from the block's buffer).
  const int64_t chunk = qk_out ? q_block : (kQueryChunk + q_block - 1) / q_block * q_block;
  const int64_t q_chunks = (sq + chunk - 1) / chunk;
  const int64_t items = batch * hq * q_chunks;
  const int64_t work_per_item = std::min(sq, chunk) * total * (dk + dv);
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(work_per_item, 1));

  ctx.pool.parallel_for(items, grain, [&](int64_t begin, int64_t end) {
    thread_local cpu::AlignedFloats scores, accum, maxima, sums, packed_q;
    scores.resize(size_t(q_block * key_block));
    packed_q.resize(size_t(chunk * dk));
    accum.resize(size_t(chunk * dv));
    maxima.resize(size_t(chunk));
    sums.resize(size_t(chunk));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t qc = item % q_chunks, bh = item / q_chunks;
      const int64_t b = bh / hq, h = bh % hq, kh = h / group;
      const int64_t c0 = qc * chunk, chunk_rows = std::min(chunk, sq - c0);
      const int64_t offset = has_past ? past : nonpad.empty() ? 0 : nonpad[size_t(b)] - sq;
      const int64_t valid = nonpad.empty() ? total : nonpad[size_t(b)];
      const float *k = keys.rows(b, kh), *v = values.rows(b, kh);
      float *s = scores.data(), *row_max = maxima.data(), *row_sum = sums.data();
      // The chunk's queries in the micro-kernel's panels (chunk and q_block are multiples of its
      // rows), times the scale: the scores come out scaled.
      const cpu::PanelBlock qp =
          cpu::StridedA(queries.rows(b, h) + c0 * queries.row_stride, queries.row_stride, false)
              .panels(0, chunk_rows, 0, dk, micro.mr, packed_q.data());
      vec::run_best([&]() LUMEN_VEC_INLINE {
        float *q = packed_q.data();
        const int64_t count = (chunk_rows + micro.mr - 1) / micro.mr * qp.panel_stride;
        for (int64_t i = 0; i < count; ++i) q[i] *= scale;
      });
      std::fill(accum.data(), accum.data() + chunk_rows * dv, 0.0f);
      std::fill(row_max, row_max + chunk_rows, kNegInf);
      std::fill(row_sum, row_sum + chunk_rows, 0.0f);
      // Keys past a row's causal limit are masked: blocks past the last row's are not visited.
      auto causal_end = [&](int64_t last_row) {
        return masking.causal ? std::clamp<int64_t>(last_row + offset + 1, 0, total) : total;
      };
      const int64_t key_end = causal_end(c0 + chunk_rows - 1);
      for (int64_t j0 = 0; j0 < key_end; j0 += key_block) {
        const int64_t n = std::min(key_block, key_end - j0);
        const cpu::PackedB kt(cpu::StridedB(k + j0 * keys.row_stride, keys.row_stride, true), dk, n,
                              micro);
        const cpu::PackedB vb(cpu::StridedB(v + j0 * values.row_stride, values.row_stride, false),
                              n, dv, micro);
        for (int64_t i0 = c0; i0 < c0 + chunk_rows; i0 += q_block) {
          const int64_t rows = std::min(q_block, c0 + chunk_rows - i0);
          if (causal_end(i0 + rows - 1) <= j0) continue;
          const cpu::PackedPanelsA q(qp.data + (i0 - c0) / micro.mr * qp.panel_stride, dk,
                                     micro.mr);
          float *o = accum.data() + (i0 - c0) * dv;
          float *m = row_max + (i0 - c0), *l = row_sum + (i0 - c0);
          cpu::sgemm(ctx.pool, rows, n, dk, q, kt, s, key_block, {.max_threads = 1});
          vec::run_best([&]() LUMEN_VEC_INLINE {
            for (int64_t r = 0; r < rows; ++r) {
              float *sr = s + r * key_block;
              float *scores_out =
                  qk_out ? qk_out->data<float>() + ((bh * sq) + i0 + r) * total + j0 : nullptr;
              if (scores_out && mode <= 1)
                for (int64_t j = 0; j < n; ++j)
                  scores_out[j] = softcap > 0 ? softcap * std::tanh(sr[j] / softcap) : sr[j];
              const auto [lo, hi] = masking.key_range(i0 + r, offset, valid);
              const float block_max =
                  finish_scores(sr, n, j0, masking, b, h, i0 + r, lo, hi, softcap);
              if (scores_out && mode == 2) std::memcpy(scores_out, sr, sizeof(float) * size_t(n));
              const float new_max = std::max(m[r], block_max);
              if (new_max == kNegInf) {  // every key so far masked: nothing to add
                std::fill(sr, sr + n, 0.0f);
                continue;
              }
              const float correction = act::exp(m[r] - new_max);
              l[r] = l[r] * correction + float(cpu::exp_sum<float, true>(sr, sr, n, new_max));
              m[r] = new_max;
              if (correction != 1.0f)
                for (int64_t d = 0; d < dv; ++d) o[r * dv + d] *= correction;
            }
          });
          cpu::sgemm(ctx.pool, rows, dv, n, cpu::StridedA(s, key_block, false), vb, o, dv,
                     {.accumulate = true, .max_threads = 1});
        }
      }
      for (int64_t r = 0; r < chunk_rows; ++r) {
        const float inv = row_sum[r] > 0 ? 1.0f / row_sum[r] : 0.0f;  // all masked: zeros
        float *yr = y + (out.rows(b, h) - y) + (c0 + r) * out.row_stride;
        const float *o = accum.data() + r * dv;
        for (int64_t d = 0; d < dv; ++d) yr[d] = o[d] * inv;
        if (qk_out && mode == 3) {  // one block of rows and keys: its probabilities are in s
          float *pr = qk_out->data<float>() + ((bh * sq) + c0 + r) * total;
          for (int64_t j = 0; j < total; ++j) pr[j] = j < key_end ? s[r * key_block + j] * inv : 0;
        }
      }
      if (qk_out && masking.causal && mode <= 2) {  // scores of the keys never visited
        const float *q = queries.rows(b, h) + c0 * queries.row_stride;
        for (int64_t r = 0; r < chunk_rows; ++r)
          for (int64_t j = key_end; j < total; ++j) {
            float x = kNegInf;
            if (mode <= 1) {
              x = 0;
              for (int64_t d = 0; d < dk; ++d)
                x += q[r * queries.row_stride + d] * k[j * keys.row_stride + d];
              x *= scale;
              if (softcap > 0) x = softcap * std::tanh(x / softcap);
            }
            qk_out->data<float>()[((bh * sq) + c0 + r) * total + j] = x;
          }
      }
    }
  });
}

LUMEN_REGISTER_KERNEL("cpu", "attention", attention_f32, DType::Float32);

}  // namespace
}  // namespace lumen
