// CPU mod (broadcast, ONNX's rule from backends/common/modulo.h, NumPy or C sign) and range: the
// integer arithmetic of exported position and window code (Swin's shifted windows, positions).
#include "backends/common/broadcast.h"
#include "backends/common/modulo.h"
#include "core/kernel.h"
#include "core/scalar.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 16;

template <class T>
void mod_typed(KernelContext &ctx, const BroadcastLoop &runs) {
  const T *pa = ctx.input(0).data<T>(), *pb = ctx.input(1).data<T>();
  T *py = ctx.output(0).data<T>();
  const bool fmod = ctx.attrs.get_int("fmod", 0) != 0;
  const int64_t sa = runs.a_walks() ? 1 : 0, sb = runs.b_walks() ? 1 : 0;
  if constexpr (std::is_integral_v<T>)
    for (int64_t i = 0, n = ctx.input(1).numel(); i < n; ++i)
      if (pb[i] == T(0)) ctx.fail("integer modulo by zero");
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    runs.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
      for (int64_t i = 0; i < len; ++i)
        py[yo + i] = mod_value<T>(pa[ao + i * sa], pb[bo + i * sb], fmod);
    });
  });
}

void mod(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  if (ctx.output(0).numel() == 0) return;
  BroadcastLoop runs;
  if (a.dtype() != b.dtype() || !runs.init(a.shape(), b.shape(), ctx.output(0).shape()))
    ctx.fail("inputs ", dtype_name(a.dtype()), " ", a.shape().to_string(), " and ",
             dtype_name(b.dtype()), " ", b.shape().to_string(), " are not supported");
  if (!scalar::visit_numeric(a.dtype(), [&](auto tag) { mod_typed<decltype(tag)>(ctx, runs); }))
    ctx.fail("no cpu kernel for ", dtype_name(a.dtype()));
}

template <class T>
T first_value(const Tensor &t) {
  return t.data<T>()[0];
}

// start + i * delta; for floats the step is (start + delta) - start, as NumPy's arange (and ONNX's
// reference, bit for bit in float64) computes it.
template <class T>
void range(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  T *py = y.data<T>();
  const T start = first_value<T>(ctx.input(0)), delta = first_value<T>(ctx.input(2));
  if constexpr (std::is_integral_v<T>) {
    for (int64_t i = 0, n = y.numel(); i < n; ++i) py[i] = T(start + T(i) * delta);
  } else {
    const double s = double(start), step = (double(start) + double(delta)) - double(start);
    for (int64_t i = 0, n = y.numel(); i < n; ++i) py[i] = T(s + double(i) * step);
  }
}

LUMEN_REGISTER_KERNEL("cpu", "mod", mod, DType::Float32, DType::Float64, DType::Int8, DType::Int16,
                      DType::Int32, DType::Int64, DType::UInt8, DType::UInt16, DType::UInt32,
                      DType::UInt64);
LUMEN_REGISTER_KERNEL("cpu", "range", range<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "range", range<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "range", range<int32_t>, DType::Int32);
LUMEN_REGISTER_KERNEL("cpu", "range", range<int64_t>, DType::Int64);

}  // namespace
}  // namespace lumen
