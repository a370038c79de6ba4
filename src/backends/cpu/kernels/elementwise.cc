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

// y = f(a, b) over one run; load/store are the identity except for Float16/BFloat16.
template <class F, class TA, class TB>
void run(const TA *a, bool a_walks, const TB *b, bool b_walks, TA *y, int64_t len) {
  const F f;
  using bin::load;
  using bin::store;
  if (a_walks && b_walks) {
    for (int64_t i = 0; i < len; ++i) y[i] = store<TA>(f(load(a[i]), load(b[i])));
  } else if (a_walks) {
    const auto vb = load(*b);
    for (int64_t i = 0; i < len; ++i) y[i] = store<TA>(f(load(a[i]), vb));
  } else if (b_walks) {
    const auto va = load(*a);
    for (int64_t i = 0; i < len; ++i) y[i] = store<TA>(f(va, load(b[i])));
  } else {
    const TA v = store<TA>(f(load(*a), load(*b)));
    for (int64_t i = 0; i < len; ++i) y[i] = v;
  }
}

// TA is the dtype of input 0 and of the output; TB the dtype of input 1 (differs only for pow).
template <class F, class TA, class TB>
void binary_typed(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const TA *pa = a.data<TA>();
  const TB *pb = b.data<TB>();
  TA *py = y.data<TA>();
  if constexpr (std::is_same_v<F, bin::Div> && std::is_integral_v<TA>) {
    // With a non-empty output every element of b is used, so any zero is a division by zero.
    for (int64_t i = 0, nb = b.numel(); i < nb; ++i)
      if (pb[i] == TB(0)) ctx.fail("integer division by zero");
  }
  const BroadcastLoop loop(a.shape(), b.shape(), y.shape());
  const bool a_walks = loop.a_inner_stride() != 0, b_walks = loop.b_inner_stride() != 0;
  ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    loop.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
      run<F, TA, TB>(pa + ao, a_walks, pb + bo, b_walks, py + yo, len);
    });
  });
}

template <class F>
void binary(KernelContext &ctx) {
  const DType da = ctx.input(0).dtype(), db = ctx.input(1).dtype();
  bool done = false;
  bin::visit_dtype(da, [&](auto ta) {
    using TA = decltype(ta);
    if constexpr (!std::is_same_v<TA, bool>) {
      if constexpr (std::is_same_v<F, bin::Pow>) {
        bin::visit_dtype(db, [&](auto tb) {
          using TB = decltype(tb);
          if constexpr (!std::is_same_v<TB, bool>) {
            binary_typed<F, TA, TB>(ctx);
            done = true;
          }
        });
      } else if (da == db) {
        binary_typed<F, TA, TA>(ctx);
        done = true;
      }
    }
  });
  if (!done) ctx.fail("no cpu kernel for ", dtype_name(da), " and ", dtype_name(db), " inputs");
}

#define LUMEN_CPU_BINARY(name, F) \
  LUMEN_REGISTER_KERNEL("cpu", name, binary<F>, LUMEN_NUMERIC_DTYPES)

LUMEN_CPU_BINARY("add", bin::Add);
LUMEN_CPU_BINARY("sub", bin::Sub);
LUMEN_CPU_BINARY("mul", bin::Mul);
LUMEN_CPU_BINARY("div", bin::Div);
LUMEN_CPU_BINARY("maximum", bin::Maximum);
LUMEN_CPU_BINARY("minimum", bin::Minimum);
LUMEN_CPU_BINARY("pow", bin::Pow);

}  // namespace
}  // namespace lumen
