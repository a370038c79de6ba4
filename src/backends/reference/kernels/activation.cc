// Reference element-wise activations: one plain loop per op over the formulas in
// activation_functors.h.
#include "backends/common/activation_functors.h"
#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

template <template <class> class F, class T>
void unary_typed(KernelContext &ctx) {
  const F<T> f(ctx.attrs);
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  for (int64_t i = 0, n = ctx.output(0).numel(); i < n; ++i) y[i] = f(x[i]);
}

// Half-precision types are computed in float and rounded once on the way out.
template <template <class> class F, class H>
void unary_half(KernelContext &ctx) {
  const F<float> f(ctx.attrs);
  const H *x = ctx.input(0).data<H>();
  H *y = ctx.output(0).data<H>();
  for (int64_t i = 0, n = ctx.output(0).numel(); i < n; ++i)
    y[i] = bin::store<H>(f(bin::load<H>(x[i])));
}

template <template <class> class F>
void unary(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32: return unary_typed<F, float>(ctx);
    case DType::Float64: return unary_typed<F, double>(ctx);
    case DType::Float16: return unary_half<F, Float16>(ctx);
    case DType::BFloat16: return unary_half<F, BFloat16>(ctx);
    default: ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

// For relu, clip, neg and abs, which also take signed integers.
template <template <class> class F>
void unary_signed(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Int8: return unary_typed<F, int8_t>(ctx);
    case DType::Int16: return unary_typed<F, int16_t>(ctx);
    case DType::Int32: return unary_typed<F, int32_t>(ctx);
    case DType::Int64: return unary_typed<F, int64_t>(ctx);
    default: return unary<F>(ctx);
  }
}

#define LUMEN_REF_UNARY(name, F)                                                         \
  LUMEN_REGISTER_KERNEL("reference", name, unary<F>, DType::Float32, DType::Float64,     \
                        DType::Float16, DType::BFloat16)
#define LUMEN_REF_UNARY_SIGNED(name, F)                                                  \
  LUMEN_REGISTER_KERNEL("reference", name, unary_signed<F>, DType::Float32, DType::Float64, \
                        DType::Float16, DType::BFloat16, DType::Int8, DType::Int16,      \
                        DType::Int32, DType::Int64)

LUMEN_REF_UNARY_SIGNED("relu", act::Relu);
LUMEN_REF_UNARY("leaky_relu", act::LeakyRelu);
LUMEN_REF_UNARY("sigmoid", act::Sigmoid);
LUMEN_REF_UNARY("tanh", act::Tanh);
LUMEN_REF_UNARY("gelu", act::Gelu);
LUMEN_REF_UNARY("silu", act::Silu);
LUMEN_REF_UNARY("elu", act::Elu);
LUMEN_REF_UNARY("softplus", act::Softplus);
LUMEN_REF_UNARY("hard_sigmoid", act::HardSigmoid);
LUMEN_REF_UNARY("hard_swish", act::HardSwish);
LUMEN_REF_UNARY_SIGNED("clip", act::Clip);
LUMEN_REF_UNARY("exp", act::Exp);
LUMEN_REF_UNARY("log", act::Log);
LUMEN_REF_UNARY("sqrt", act::Sqrt);
LUMEN_REF_UNARY_SIGNED("neg", act::Neg);
LUMEN_REF_UNARY_SIGNED("abs", act::Abs);

}  // namespace
}  // namespace lumen
