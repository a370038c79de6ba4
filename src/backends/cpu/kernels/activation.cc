// CPU element-wise activations: the formulas of activation_functors.h (branch-free polynomials
// for float32 exp/tanh/sigmoid/erf) in a flat loop over contiguous memory, compiled for the best
// vector ISA at run time, split across the thread pool only when the tensor is large enough to
// pay for it. Input and output may be the same memory (in-place planning).
#include <type_traits>

#include "backends/common/activation_functors.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Elements per parallel chunk, ~10 us of work: cheap formulas are bound by memory bandwidth,
// transcendental ones by arithmetic (and float64 falls back to scalar libm calls).
template <template <class> class F, class T>
constexpr int64_t grain() {
  constexpr bool cheap =
      std::is_same_v<F<T>, act::Relu<T>> || std::is_same_v<F<T>, act::LeakyRelu<T>> ||
      std::is_same_v<F<T>, act::Clip<T>> || std::is_same_v<F<T>, act::Neg<T>> ||
      std::is_same_v<F<T>, act::Abs<T>> || std::is_same_v<F<T>, act::HardSigmoid<T>> ||
      std::is_same_v<F<T>, act::HardSwish<T>>;
  if (cheap) return int64_t(1) << 16;
  return std::is_same_v<T, float> ? int64_t(1) << 12 : int64_t(1) << 11;
}

// y[i] = f(x[i]) over the pool, vectorized.
template <class T, class Fn>
void map_elements(KernelContext &ctx, const Fn &f, int64_t grain) {
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  ctx.pool.parallel_for(ctx.output(0).numel(), grain, [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
    });
  });
}

template <template <class> class F, class T>
void unary_typed(KernelContext &ctx) {
  // gelu: one loop per form, not act::Gelu's branch per element, which kept the loop from
  // vectorizing (14 ns per element).
  if constexpr (std::is_same_v<F<T>, act::Gelu<T>>) {
    if (act::Gelu<T>(ctx.attrs).tanh_approx)
      return map_elements<T>(ctx, act::GeluTanh<T>{}, grain<F, T>());
    return map_elements<T>(ctx, act::GeluErf<T>{}, grain<F, T>());
  } else {
    return map_elements<T>(ctx, F<T>(ctx.attrs), grain<F, T>());
  }
}

template <template <class> class F>
void unary(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return unary_typed<F, float>(ctx);
    case DType::Float64:
      return unary_typed<F, double>(ctx);
    case DType::Int8:  // relu and clip of signed integers (clamped indices, quantized values)
      return unary_typed<F, int8_t>(ctx);
    case DType::Int16:
      return unary_typed<F, int16_t>(ctx);
    case DType::Int32:
      return unary_typed<F, int32_t>(ctx);
    case DType::Int64:
      return unary_typed<F, int64_t>(ctx);
    default:
      ctx.fail("no cpu kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

#define LUMEN_CPU_UNARY(name, F) \
  LUMEN_REGISTER_KERNEL("cpu", name, unary<F>, DType::Float32, DType::Float64)

#define LUMEN_CPU_UNARY_SIGNED(name, F)                                                     \
  LUMEN_REGISTER_KERNEL("cpu", name, unary<F>, DType::Float32, DType::Float64, DType::Int8, \
                        DType::Int16, DType::Int32, DType::Int64)

LUMEN_CPU_UNARY_SIGNED("relu", act::Relu);
LUMEN_CPU_UNARY("leaky_relu", act::LeakyRelu);
LUMEN_CPU_UNARY("sigmoid", act::Sigmoid);
LUMEN_CPU_UNARY("tanh", act::Tanh);
LUMEN_CPU_UNARY("gelu", act::Gelu);
LUMEN_CPU_UNARY("silu", act::Silu);
LUMEN_CPU_UNARY("elu", act::Elu);
LUMEN_CPU_UNARY("softplus", act::Softplus);
LUMEN_CPU_UNARY("hard_sigmoid", act::HardSigmoid);
LUMEN_CPU_UNARY("hard_swish", act::HardSwish);
LUMEN_CPU_UNARY_SIGNED("clip", act::Clip);
LUMEN_CPU_UNARY("exp", act::Exp);
LUMEN_CPU_UNARY("erf", act::Erf);
LUMEN_CPU_UNARY("log", act::Log);
LUMEN_CPU_UNARY("sqrt", act::Sqrt);
LUMEN_CPU_UNARY("neg", act::Neg);
LUMEN_CPU_UNARY("abs", act::Abs);

// swiglu(a, b) = a * sigmoid(alpha * a) * b, a and b of one shape.
template <class T>
void swiglu_typed(KernelContext &ctx) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  if (ta.shape() != tb.shape())
    ctx.fail("inputs ", ta.shape().to_string(), " and ", tb.shape().to_string(), " differ");
  const T alpha = T(ctx.attrs.get_float("alpha", 1.0));
  const T *a = ta.data<T>(), *b = tb.data<T>();
  T *y = ctx.output(0).data<T>();
  ctx.pool.parallel_for(ta.numel(), int64_t(1) << 12, [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t i = begin; i < end; ++i) y[i] = a[i] * act::sigmoid(alpha * a[i]) * b[i];
    });
  });
}

void swiglu(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return swiglu_typed<double>(ctx);
  swiglu_typed<float>(ctx);
}
LUMEN_REGISTER_KERNEL("cpu", "swiglu", swiglu, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
