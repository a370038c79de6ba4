// CPU logical_and/or/xor (broadcast, bool), logical_not, is_nan and is_inf (float32/float64): the
// mask arithmetic of exported attention and detection code, in loops split over the pool.
#include <cmath>

#include "backends/common/broadcast.h"
#include "backends/common/logical_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 16;

template <class F>
void logical(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  BroadcastLoop runs;
  if (!runs.init(a.shape(), b.shape(), y.shape()))
    ctx.fail("broadcasting ", a.shape().to_string(), " and ", b.shape().to_string(), ": at most ",
             kMaxBroadcastRank, " dims are supported");
  const bool *pa = a.data<bool>(), *pb = b.data<bool>();
  bool *py = y.data<bool>();
  const int64_t sa = runs.a_walks() ? 1 : 0, sb = runs.b_walks() ? 1 : 0;
  const F f;
  ctx.pool.parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
    runs.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
      for (int64_t i = 0; i < len; ++i) py[yo + i] = f(pa[ao + i * sa], pb[bo + i * sb]);
    });
  });
}

void logical_not(KernelContext &ctx) {
  const bool *px = ctx.input(0).data<bool>();
  bool *py = ctx.output(0).data<bool>();
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) py[i] = !px[i];
  });
}

template <class T, bool kNan>
void float_test_typed(KernelContext &ctx) {
  const T *px = ctx.input(0).data<T>();
  bool *py = ctx.output(0).data<bool>();
  const bool pos = ctx.attrs.get_int("detect_positive", 1) != 0;
  const bool neg = ctx.attrs.get_int("detect_negative", 1) != 0;
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if constexpr (kNan)
        py[i] = std::isnan(px[i]);
      else
        py[i] = std::isinf(px[i]) && (px[i] > 0 ? pos : neg);
    }
  });
}

template <bool kNan>
void float_test(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return float_test_typed<double, kNan>(ctx);
  float_test_typed<float, kNan>(ctx);
}

LUMEN_REGISTER_KERNEL("cpu", "logical_and", logical<logic::And>, DType::Bool);
LUMEN_REGISTER_KERNEL("cpu", "logical_or", logical<logic::Or>, DType::Bool);
LUMEN_REGISTER_KERNEL("cpu", "logical_xor", logical<logic::Xor>, DType::Bool);
LUMEN_REGISTER_KERNEL("cpu", "logical_not", logical_not, DType::Bool);
LUMEN_REGISTER_KERNEL("cpu", "is_nan", float_test<true>, DType::Float32, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "is_inf", float_test<false>, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
