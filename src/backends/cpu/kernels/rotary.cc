// CPU rotate_half_mix (float32): y = x * cos + rotate_half(x) * sin in one pass, instead of the
// slice, slice, neg, concat, mul, mul, add that torch models export for a rotary embedding (seven
// steps per Q and K per layer, which dominate a decoder step's dispatch). Rows of x in parallel;
// each half row is one vectorized loop, cos and sin rows broadcast by BroadcastRows.
#include <algorithm>

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

LUMEN_REGISTER_KERNEL("cpu", "rotate_half_mix", rotate_half_mix, DType::Float32);

}  // namespace
}  // namespace lumen
