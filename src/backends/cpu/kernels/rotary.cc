// CPU rotate_half_mix (float32): y = x * cos + rotate_half(x) * sin in one pass, instead of the
// slice, slice, neg, concat, mul, mul, add that torch models export for a rotary embedding (seven
// steps per Q and K per layer, which dominate a decoder step's dispatch). Rows of x in parallel;
// each half row is one vectorized loop, cos and sin rows broadcast by BroadcastRows.
//
// And rotary_embedding (ONNX RotaryEmbedding, float32), the reference's semantics
// (backends/reference/kernels/rotary.cc) computed in float: (batch, position) rows in parallel,
// the cache row looked up once per row, every head's pairs rotated by one loop.
#include <algorithm>
#include <vector>

#include "backends/common/broadcast_rows.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

void rotate_half_mix(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &cos_t = ctx.input(1), &sin_t = ctx.input(2);
  const int64_t d = x.shape()[x.rank() - 1], half = d / 2;
  const int64_t rows = d > 0 ? x.numel() / d : 0;
  const BroadcastRows row_of(x.shape(), cos_t.shape());
  const float *xs = x.data<float>(), *cs = cos_t.data<float>(), *ss = sin_t.data<float>();
  float *ys = ctx.output(0).data<float>();
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, d)),
                        [&](int64_t begin, int64_t end) {
                          vec::run_best([&]() LUMEN_VEC_INLINE {
                            for (int64_t r = begin; r < end; ++r) {
                              const float *__restrict xr = xs + r * d;
                              const int64_t cache_row = row_of(r) * d;
                              const float *__restrict c = cs + cache_row;
                              const float *__restrict s = ss + cache_row;
                              float *__restrict y = ys + r * d;
                              for (int64_t j = 0; j < half; ++j)
                                y[j] = xr[j] * c[j] - xr[j + half] * s[j];
                              for (int64_t j = half; j < d; ++j)
                                y[j] = xr[j] * c[j] + xr[j - half] * s[j];
                            }
                          });
                        });
}

// The cache row of (b, s): position_ids[b, s] (bounds-checked), row b * S + s of 3-D caches, or s.
int64_t cache_row(const KernelContext &ctx, const Shape &cache, int64_t b, int64_t s, int64_t S) {
  if (ctx.has_input(3)) {
    const Tensor &p = ctx.input(3);
    const int64_t i = b * S + s;
    const int64_t row = p.dtype() == DType::Int32 ? p.data<int32_t>()[i] : p.data<int64_t>()[i];
    if (row < 0 || row >= cache[0])
      ctx.fail("position id ", row, " is out of range for caches ", cache.to_string());
    return row;
  }
  return cache.rank() == 3 ? b * S + s : s;
}

void rotary_embedding(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &cos_t = ctx.input(1), &sin_t = ctx.input(2);
  Tensor &y = ctx.output(0);
  const bool four = x.rank() == 4;
  const int64_t B = x.shape()[0], S = four ? x.shape()[2] : x.shape()[1];
  const int64_t H = four ? x.shape()[1] : ctx.attrs.get_int("num_heads", 0);
  const int64_t D = four ? x.shape()[3] : x.shape()[2] / std::max<int64_t>(1, H);
  const int64_t rd_attr = ctx.attrs.get_int("rotary_embedding_dim", 0);
  const int64_t half = (rd_attr == 0 ? D : rd_attr) / 2;
  const bool interleaved = ctx.attrs.get_int("interleaved", 0) != 0;
  const Shape &cs = cos_t.shape();
  if (ctx.has_input(3) && (ctx.input(3).shape()[0] != B || ctx.input(3).shape()[1] != S))
    ctx.fail("position_ids ", ctx.input(3).shape().to_string(), " must be [", B, ", ", S, "]");
  if (!ctx.has_input(3) && (cs.rank() == 3 ? cs[0] != B || cs[1] != S : cs[0] < S))
    ctx.fail("caches ", cs.to_string(), " do not cover ", B, " x ", S, " positions");
  std::vector<int64_t> rows(static_cast<size_t>(B * S));  // checked before the parallel loop
  for (int64_t r = 0; r < B * S; ++r)
    rows[static_cast<size_t>(r)] = cache_row(ctx, cs, r / S, r % S, S);
  const float *xs = x.data<float>(), *cv = cos_t.data<float>(), *sv = sin_t.data<float>();
  float *ys = y.data<float>();
  ctx.pool.parallel_for(
      B * S, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, H * D)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = r / S, s = r % S, row = rows[static_cast<size_t>(r)];
          const float *c = cv + row * half, *sn = sv + row * half;
          for (int64_t h = 0; h < H; ++h) {
            const int64_t base = four ? ((b * H + h) * S + s) * D : (b * S + s) * H * D + h * D;
            const float *xr = xs + base;
            float *yr = ys + base;
            if (yr != xr) std::copy(xr + 2 * half, xr + D, yr + 2 * half);  // past the rotated dims
            vec::run_best([&]() LUMEN_VEC_INLINE {
              if (interleaved) {
                for (int64_t j = 0; j < half; ++j) {
                  const float x1 = xr[2 * j], x2 = xr[2 * j + 1];
                  yr[2 * j] = c[j] * x1 - sn[j] * x2;
                  yr[2 * j + 1] = sn[j] * x1 + c[j] * x2;
                }
              } else {
                for (int64_t j = 0; j < half; ++j) {
                  const float x1 = xr[j], x2 = xr[j + half];
                  yr[j] = c[j] * x1 - sn[j] * x2;
                  yr[j + half] = sn[j] * x1 + c[j] * x2;
                }
              }
            });
          }
        }
      });
}

LUMEN_REGISTER_KERNEL("cpu", "rotate_half_mix", rotate_half_mix, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "rotary_embedding", rotary_embedding, DType::Float32);

}  // namespace
}  // namespace lumen
