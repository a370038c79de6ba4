// CPU comparisons (equal, less, greater, less_equal, greater_equal) and where, for float32, int32
// and int64 values: the broadcast collapsed into runs (backends/common/broadcast.h) and tight
// loops compiled for the best vector ISA, split over the pool by output ranges. Attention masks
// are built from these (where(mask == 0, -inf, scores)); the reference kernels index every element
// through the broadcast, ~50x slower. Other dtypes, and a where whose x and y both broadcast
// differently from the output, run the reference kernels.
#include <type_traits>

#include "backends/common/binary_functors.h"
#include "backends/common/broadcast.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 16;  // output elements per parallel chunk

// Calls f with a value of the element type for float32, int32 and int64; false otherwise.
template <class F>
bool visit_values(DType dtype, F &&f) {
  if (dtype == DType::Float32) return f(float{}), true;
  if (dtype == DType::Int32) return f(int32_t{}), true;
  if (dtype == DType::Int64) return f(int64_t{}), true;
  return false;
}

template <class F, class T>
void compare_typed(KernelContext &ctx, const BroadcastLoop &runs) {
  const T *pa = ctx.input(0).data<T>(), *pb = ctx.input(1).data<T>();
  bool *py = ctx.output(0).data<bool>();
  const bool a_walks = runs.a_walks(), b_walks = runs.b_walks();
  const F f;
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      runs.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
        const T *a = pa + ao, *b = pb + bo;
        bool *y = py + yo;
        if (a_walks && b_walks)
          for (int64_t i = 0; i < len; ++i) y[i] = f(a[i], b[i]);
        else if (a_walks)
          for (int64_t i = 0; i < len; ++i) y[i] = f(a[i], *b);
        else if (b_walks)
          for (int64_t i = 0; i < len; ++i) y[i] = f(*a, b[i]);
        else
          for (int64_t i = 0; i < len; ++i) y[i] = f(*a, *b);
      });
    });
  });
}

template <class F>
void compare(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  BroadcastLoop runs;
  if (ctx.output(0).numel() == 0) return;
  if (a.dtype() != b.dtype() || !runs.init(a.shape(), b.shape(), ctx.output(0).shape()) ||
      !visit_values(a.dtype(), [&](auto tag) { compare_typed<F, decltype(tag)>(ctx, runs); }))
    run_reference_kernel(ctx);
}

// where(c, x, y) when one of x and y is a single element or has the other's shape: the broadcast
// of (c, v) for the other one, v, gives both offsets.
template <class T>
void where_typed(KernelContext &ctx, const BroadcastLoop &runs, bool v_is_x, bool other_scalar) {
  const bool *pc = ctx.input(0).data<bool>();
  const T *pv = ctx.input(v_is_x ? 1 : 2).data<T>();
  const T *po = ctx.input(v_is_x ? 2 : 1).data<T>();
  T *py = ctx.output(0).data<T>();
  const bool c_walks = runs.a_walks(), v_walks = runs.b_walks();
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      runs.for_range(begin, end, [&](int64_t yo, int64_t co, int64_t vo, int64_t len) {
        const bool *c = pc + co;
        const T *v = pv + vo, *o = other_scalar ? po : po + vo;
        T *y = py + yo;
        const int64_t cs = c_walks ? 1 : 0, vs = v_walks ? 1 : 0, os = other_scalar ? 0 : vs;
        for (int64_t i = 0; i < len; ++i) {
          const T xv = v_is_x ? v[i * vs] : o[i * os], yv = v_is_x ? o[i * os] : v[i * vs];
          y[i] = c[i * cs] ? xv : yv;
        }
      });
    });
  });
}

void where(KernelContext &ctx) {
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  Tensor &out = ctx.output(0);
  if (out.numel() == 0) return;
  // v: the input the loop walks with the condition; the other is a single element or v's shape.
  const bool y_follows = y.numel() == 1 || y.shape() == x.shape();
  const bool x_follows = x.numel() == 1;
  BroadcastLoop runs;
  const bool v_is_x = y_follows;
  const Tensor &v = v_is_x ? x : y;
  const bool other_scalar = v_is_x ? y.numel() == 1 : true;
  if (x.dtype() != y.dtype() || (!y_follows && !x_follows) ||
      !runs.init(c.shape(), v.shape(), out.shape()) || !visit_values(x.dtype(), [&](auto tag) {
        where_typed<decltype(tag)>(ctx, runs, v_is_x, other_scalar);
      }))
    run_reference_kernel(ctx);
}

#define LUMEN_CPU_COMPARE(name, F) \
  LUMEN_REGISTER_KERNEL("cpu", name, compare<F>, DType::Float32, DType::Int32, DType::Int64)
LUMEN_CPU_COMPARE("equal", bin::Equal);
LUMEN_CPU_COMPARE("less", bin::Less);
LUMEN_CPU_COMPARE("greater", bin::Greater);
LUMEN_CPU_COMPARE("less_equal", bin::LessEqual);
LUMEN_CPU_COMPARE("greater_equal", bin::GreaterEqual);
// Dispatched on the condition's dtype, like the reference kernel.
LUMEN_REGISTER_KERNEL("cpu", "where", where, DType::Bool);

}  // namespace
}  // namespace lumen
