// CPU broadcasting binary ops. BroadcastLoop collapses the shapes into runs whose inputs either
// walk (stride 1) or repeat one element (stride 0); each run is one of four tight loops the
// compiler vectorizes. Runs are split across the thread pool by output element ranges, so even a
// single long run (same-shape inputs) is parallel.
#include <type_traits>

#include "backends/common/binary_functors.h"
#include "backends/common/broadcast.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 15;

template <class F, class T>
void run(const T *a, bool a_walks, const T *b, bool b_walks, T *y, int64_t len) {
  const F f;
  if (a_walks && b_walks) {
    for (int64_t i = 0; i < len; ++i) y[i] = f(a[i], b[i]);
  } else if (a_walks) {
    const T vb = *b;
    for (int64_t i = 0; i < len; ++i) y[i] = f(a[i], vb);
  } else if (b_walks) {
    const T va = *a;
    for (int64_t i = 0; i < len; ++i) y[i] = f(va, b[i]);
  } else {
    const T v = f(*a, *b);
    for (int64_t i = 0; i < len; ++i) y[i] = v;
  }
}

template <class F, class T>
void binary_typed(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T *py = y.data<T>();
  if constexpr (std::is_same_v<F, bin::Div> && std::is_integral_v<T>) {
    // With a non-empty output every element of b is used, so any zero is a division by zero.
    for (int64_t i = 0, nb = b.numel(); i < nb; ++i)
      if (pb[i] == T(0)) ctx.fail("integer division by zero");
  }
  const BroadcastLoop loop(a.shape(), b.shape(), y.shape());
  const bool a_walks = loop.a_inner_stride() != 0, b_walks = loop.b_inner_stride() != 0;
  ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    loop.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
      run<F, T>(pa + ao, a_walks, pb + bo, b_walks, py + yo, len);
    });
  });
}

template <class F>
void binary(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return binary_typed<F, float>(ctx);
    case DType::Float64:
      return binary_typed<F, double>(ctx);
    case DType::Int32:
      if constexpr (!std::is_same_v<F, bin::Pow>) return binary_typed<F, int32_t>(ctx);
      break;
    case DType::Int64:
      if constexpr (!std::is_same_v<F, bin::Pow>) return binary_typed<F, int64_t>(ctx);
      break;
    default:
      break;
  }
  ctx.fail("no cpu kernel for ", dtype_name(ctx.input(0).dtype()));
}

#define LUMEN_CPU_BINARY(name, F)                                                             \
  LUMEN_REGISTER_KERNEL("cpu", name, binary<F>, DType::Float32, DType::Float64, DType::Int32, \
                        DType::Int64)

LUMEN_CPU_BINARY("add", bin::Add);
LUMEN_CPU_BINARY("sub", bin::Sub);
LUMEN_CPU_BINARY("mul", bin::Mul);
LUMEN_CPU_BINARY("div", bin::Div);
LUMEN_CPU_BINARY("maximum", bin::Maximum);
LUMEN_CPU_BINARY("minimum", bin::Minimum);
LUMEN_REGISTER_KERNEL("cpu", "pow", binary<bin::Pow>, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
