// CPU softmax / log_softmax. Innermost axis: each row is contiguous (max, exp-and-sum, scale).
// Other axes: blocks of up to kBlock neighbouring columns are processed together so every pass
// reads contiguous memory rows of the block instead of striding down one column at a time; the
// per-column max and sums live on the stack (kernels do not allocate). Parallel over rows/blocks;
// the loops are compiled for the best vector ISA at run time.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/common/activation_functors.h"
#include "backends/cpu/row_reductions.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per parallel chunk, roughly
constexpr int64_t kBlock = 64;       // columns per block when the axis is not innermost

// One contiguous row: max, exp-and-sum (cpu/row_reductions.h), then the scale or the log-sum.
template <class T, bool kLog>
LUMEN_VEC_INLINE inline void softmax_row(const T *x, T *y, int64_t len) {
  const T max = cpu::row_max(x, len);
  const double sum = cpu::exp_sum<T, !kLog>(x, y, len, max);
  if constexpr (kLog) {
    const T lse = T(std::log(sum));
    for (int64_t k = 0; k < len; ++k) y[k] = (x[k] - max) - lse;
  } else {
    const T inv = T(1.0 / sum);
    for (int64_t k = 0; k < len; ++k) y[k] *= inv;
  }
}

// x and y point at element (o, 0, j0); the block covers columns j0 .. j0 + width.
template <class T, bool kLog>
LUMEN_VEC_INLINE inline void softmax_block(const T *x, T *y, int64_t len, int64_t inner,
                                           int64_t width) {
  T max[kBlock];
  double sum[kBlock];
  for (int64_t c = 0; c < width; ++c) {
    max[c] = -std::numeric_limits<T>::infinity();
    sum[c] = 0;
  }
  for (int64_t k = 0; k < len; ++k) {
    const T *row = x + k * inner;
    for (int64_t c = 0; c < width; ++c) max[c] = row[c] > max[c] ? row[c] : max[c];
  }
  for (int64_t k = 0; k < len; ++k) {
    const T *row = x + k * inner;
    T *out = y + k * inner;
    for (int64_t c = 0; c < width; ++c) {
      const T e = act::exp(row[c] - max[c]);
      sum[c] += e;
      if constexpr (!kLog) out[c] = e;
    }
  }
  T scale[kBlock];
  for (int64_t c = 0; c < width; ++c) scale[c] = kLog ? T(std::log(sum[c])) : T(1.0 / sum[c]);
  for (int64_t k = 0; k < len; ++k) {
    const T *row = x + k * inner;
    T *out = y + k * inner;
    if constexpr (kLog) {
      for (int64_t c = 0; c < width; ++c) out[c] = (row[c] - max[c]) - scale[c];
    } else {
      for (int64_t c = 0; c < width; ++c) out[c] *= scale[c];
    }
  }
}

template <class T, bool kLog>
void softmax_typed(KernelContext &ctx) {
  const Tensor &xt = ctx.input(0);
  const T *x = xt.data<T>();
  T *y = ctx.output(0).data<T>();
  if (xt.numel() == 0) return;
  const Shape &shape = xt.shape();
  // A rank-0 input is one element along its only "axis".
  int64_t outer = 1, len = 1, inner = 1;
  if (shape.rank() > 0) {
    const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
    for (size_t d = 0; d < axis; ++d) outer *= shape[d];
    for (size_t d = axis + 1; d < shape.rank(); ++d) inner *= shape[d];
    len = shape[axis];
  }
  if (inner == 1) {
    ctx.pool.parallel_for(outer, std::max<int64_t>(1, kGrain / len), [&](int64_t b, int64_t e) {
      vec::run_best([&]() LUMEN_VEC_INLINE {
        for (int64_t o = b; o < e; ++o) softmax_row<T, kLog>(x + o * len, y + o * len, len);
      });
    });
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kGrain / (len * std::min(inner, kBlock)));
  ctx.pool.parallel_for(outer * blocks, grain, [&](int64_t b, int64_t e) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
        const int64_t offset = o * len * inner + j0;
        softmax_block<T, kLog>(x + offset, y + offset, len, inner, std::min(kBlock, inner - j0));
      }
    });
  });
}

LUMEN_REGISTER_KERNEL("cpu", "softmax", (softmax_typed<float, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "softmax", (softmax_typed<double, false>), DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "log_softmax", (softmax_typed<float, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "log_softmax", (softmax_typed<double, true>), DType::Float64);

}  // namespace
}  // namespace lumen
