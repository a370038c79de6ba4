// CPU reduce_sum / reduce_mean for float32 when the reduced dims form one contiguous block (the
// common cases: the last axis in transformers' layer norms and means, or leading/middle axes).
// The input is viewed as [outer, n, inner]: inner == 1 sums contiguous rows with independent
// lanes; otherwise rows of `inner` elements are added together. Other cases run the reference
// kernel. Parallel over outer (and inner blocks).
#include <algorithm>
#include <vector>

#include "core/kernel.h"

namespace lumen {
namespace reduce_detail {
// Defined in src/graph/ops/reduce.cc.
std::vector<bool> reduce_mask(const std::vector<int64_t> &axes, size_t rank,
                              bool noop_with_empty_axes);
}  // namespace reduce_detail

namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per parallel chunk, roughly

float sum_row(const float *x, int64_t n) {
  constexpr int kLanes = 16;
  float lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[k + l];
  float tail = 0;
  for (; k < n; ++k) tail += x[k];
  for (int l = 0; l < kLanes; ++l) tail += lanes[l];
  return tail;
}

template <bool kMean>
void reduce_f32(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const Shape &shape = x.shape();
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    const Tensor &a = ctx.input(1);
    for (int64_t i = 0; i < a.numel(); ++i)
      axes.push_back(a.dtype() == DType::Int64 ? a.data<int64_t>()[i] : a.data<int32_t>()[i]);
  } else {
    axes = ctx.attrs.get_ints("axes", {});
  }
  std::vector<bool> mask;
  try {
    mask = reduce_detail::reduce_mask(axes, shape.rank(),
                                      ctx.attrs.get_int("noop_with_empty_axes", 0) != 0);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  // The reduced dims (ignoring size-1 ones) must be one block for the [outer, n, inner] view.
  int first = -1, last = -1;
  bool block = true;
  for (size_t d = 0; d < mask.size(); ++d) {
    if (!mask[d] || shape[d] == 1) continue;
    if (first < 0) first = static_cast<int>(d);
    for (int g = last + 1; last >= 0 && g < static_cast<int>(d); ++g)
      if (!mask[static_cast<size_t>(g)] && shape[static_cast<size_t>(g)] != 1) block = false;
    last = static_cast<int>(d);
  }
  if (!block || x.numel() == 0) {
    const KernelFn ref = kernel_registry("reference").find(ctx.op, DType::Float32);
    if (!ref) ctx.fail("no fallback kernel");
    return ref(ctx);
  }
  int64_t outer = 1, n = 1, inner = 1;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (first >= 0 && static_cast<int>(d) < first) outer *= shape[d];
    if (first >= 0 && static_cast<int>(d) >= first && static_cast<int>(d) <= last) n *= shape[d];
    if (first < 0 || static_cast<int>(d) > last) inner *= shape[d];
  }
  if (first < 0) {  // nothing of size > 1 reduced: every output element is one input element
    outer = 1;
    n = 1;
    inner = x.numel();
  }
  int64_t count = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) count *= shape[d];
  Tensor &y = ctx.output(0);
  if (y.numel() != outer * inner) ctx.fail("output ", y.shape().to_string(), " does not fit");
  const float scale = kMean ? 1.0f / static_cast<float>(count) : 1.0f;
  const float *px = x.data<float>();
  float *py = y.data<float>();
  if (inner == 1) {
    ctx.pool.parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)),
                          [&](int64_t b, int64_t e) {
                            for (int64_t o = b; o < e; ++o) py[o] = sum_row(px + o * n, n) * scale;
                          });
    return;
  }
  ctx.pool.parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)),
                        [&](int64_t b, int64_t e) {
                          for (int64_t o = b; o < e; ++o) {
                            float *out = py + o * inner;
                            const float *in = px + o * n * inner;
                            std::copy(in, in + inner, out);
                            for (int64_t k = 1; k < n; ++k) {
                              const float *row = in + k * inner;
                              for (int64_t j = 0; j < inner; ++j) out[j] += row[j];
                            }
                            if (kMean)
                              for (int64_t j = 0; j < inner; ++j) out[j] *= scale;
                          }
                        });
}

LUMEN_REGISTER_KERNEL("cpu", "reduce_sum", reduce_f32<false>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_mean", reduce_f32<true>, DType::Float32);

}  // namespace
}  // namespace lumen
