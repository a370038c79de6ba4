// Reference element-wise activations: one plain loop per op over the formulas in
// activation_functors.h.
#include "backends/common/activation_functors.h"
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

template <template <class> class F>
void unary(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return unary_typed<F, float>(ctx);
    case DType::Float64:
      return unary_typed<F, double>(ctx);
    default:
      ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

#define LUMEN_REF_UNARY(name, F) \
  LUMEN_REGISTER_KERNEL("reference", name, unary<F>, DType::Float32, DType::Float64)

LUMEN_REF_UNARY("relu", act::Relu);
LUMEN_REF_UNARY("leaky_relu", act::LeakyRelu);
LUMEN_REF_UNARY("sigmoid", act::Sigmoid);
LUMEN_REF_UNARY("tanh", act::Tanh);
LUMEN_REF_UNARY("gelu", act::Gelu);
LUMEN_REF_UNARY("silu", act::Silu);
LUMEN_REF_UNARY("elu", act::Elu);
LUMEN_REF_UNARY("softplus", act::Softplus);
LUMEN_REF_UNARY("hard_sigmoid", act::HardSigmoid);
LUMEN_REF_UNARY("hard_swish", act::HardSwish);
LUMEN_REF_UNARY("clip", act::Clip);
LUMEN_REF_UNARY("exp", act::Exp);
LUMEN_REF_UNARY("log", act::Log);
LUMEN_REF_UNARY("sqrt", act::Sqrt);
LUMEN_REF_UNARY("neg", act::Neg);
LUMEN_REF_UNARY("abs", act::Abs);

}  // namespace
}  // namespace lumen
