// Reference element-wise math kernels. Float16/BFloat16 are computed in float (bin::load/store).
#include <cmath>
#include <cstring>

#include "backends/common/binary_functors.h"
#include "backends/common/math_functors.h"
#include "backends/common/modulo.h"
#include "core/kernel.h"

namespace lumen {
namespace {

using namespace math;  // Sin, Cos, ... from backends/common/math_functors.h

#define LUMEN_FLOAT_DTYPES DType::Float32, DType::Float64, DType::Float16, DType::BFloat16

// Most ops are float-only; these also run on integers.
template <class F>
inline constexpr bool kAnyNumeric = std::is_same_v<F, Sign> || std::is_same_v<F, Shrink>;

template <class F>
void unary(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const F f(ctx.attrs);
  bool done = false;
  bin::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool> &&
                  (kAnyNumeric<F> || std::is_floating_point_v<bin::Compute<T>>)) {
      const T *px = x.data<T>();
      T *py = y.data<T>();
      for (int64_t i = 0, n = y.numel(); i < n; ++i) py[i] = bin::store<T>(f(bin::load(px[i])));
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(x.dtype()));
}

#define LUMEN_REF_FLOAT_UNARY(name, F) \
  LUMEN_REGISTER_KERNEL("reference", name, unary<F>, LUMEN_FLOAT_DTYPES)

LUMEN_REF_FLOAT_UNARY("sin", Sin);
LUMEN_REF_FLOAT_UNARY("cos", Cos);
LUMEN_REF_FLOAT_UNARY("tan", Tan);
LUMEN_REF_FLOAT_UNARY("asin", Asin);
LUMEN_REF_FLOAT_UNARY("acos", Acos);
LUMEN_REF_FLOAT_UNARY("atan", Atan);
LUMEN_REF_FLOAT_UNARY("sinh", Sinh);
LUMEN_REF_FLOAT_UNARY("cosh", Cosh);
LUMEN_REF_FLOAT_UNARY("asinh", Asinh);
LUMEN_REF_FLOAT_UNARY("acosh", Acosh);
LUMEN_REF_FLOAT_UNARY("atanh", Atanh);
LUMEN_REF_FLOAT_UNARY("erf", Erf);
LUMEN_REF_FLOAT_UNARY("reciprocal", Reciprocal);
LUMEN_REF_FLOAT_UNARY("floor", Floor);
LUMEN_REF_FLOAT_UNARY("ceil", Ceil);
LUMEN_REF_FLOAT_UNARY("round", Round);
LUMEN_REF_FLOAT_UNARY("softsign", Softsign);
LUMEN_REF_FLOAT_UNARY("mish", Mish);
LUMEN_REF_FLOAT_UNARY("selu", Selu);
LUMEN_REF_FLOAT_UNARY("celu", Celu);
LUMEN_REF_FLOAT_UNARY("thresholded_relu", ThresholdedRelu);
LUMEN_REGISTER_KERNEL("reference", "sign", unary<Sign>, LUMEN_NUMERIC_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "shrink", unary<Shrink>, LUMEN_NUMERIC_DTYPES);

void mod(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const bool fmod = ctx.attrs.get_int("fmod", 0) != 0;
  bool done = false;
  bin::visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T *pa = a.data<T>(), *pb = b.data<T>();
      T *py = y.data<T>();
      bin::for_each_broadcast<2>(y.shape(), {&a.shape(), &b.shape()},
                                 [&](int64_t i, const std::array<int64_t, 2> &o) {
                                   const auto va = bin::load(pa[o[0]]), vb = bin::load(pb[o[1]]);
                                   if constexpr (std::is_integral_v<T>)
                                     if (vb == T(0)) ctx.fail("integer modulo by zero");
                                   py[i] = bin::store<T>(mod_value(va, vb, fmod));
                                 });
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(a.dtype()));
}
LUMEN_REGISTER_KERNEL("reference", "mod", mod, LUMEN_NUMERIC_DTYPES);

void prelu(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &slope = ctx.input(1);
  Tensor &y = ctx.output(0);
  bool done = false;
  bin::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T *px = x.data<T>(), *ps = slope.data<T>();
      T *py = y.data<T>();
      bin::for_each_broadcast<2>(
          y.shape(), {&x.shape(), &slope.shape()}, [&](int64_t i, const std::array<int64_t, 2> &o) {
            const auto v = bin::load(px[o[0]]);
            py[i] =
                v < decltype(v)(0) ? bin::store<T>(bin::Mul{}(v, bin::load(ps[o[1]]))) : px[o[0]];
          });
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(x.dtype()));
}
LUMEN_REGISTER_KERNEL("reference", "prelu", prelu, LUMEN_NUMERIC_DTYPES);

// mean: accumulate every input (broadcast to the output) in double, then divide.
void mean(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  bool done = false;
  bin::visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<bin::Compute<T>>) {
      for (size_t k = 0; k < ctx.inputs.size(); ++k) {
        const Tensor &in = ctx.input(k);
        const T *p = in.data<T>();
        bin::for_each_broadcast<1>(y.shape(), {&in.shape()},
                                   [&](int64_t i, const std::array<int64_t, 1> &o) {
                                     acc[size_t(i)] += double(bin::load(p[o[0]]));
                                   });
      }
      T *py = y.data<T>();
      const double n = double(ctx.inputs.size());
      for (size_t i = 0; i < acc.size(); ++i) py[i] = bin::convert<T>(acc[i] / n);
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(y.dtype()));
}
LUMEN_REGISTER_KERNEL("reference", "mean", mean, LUMEN_FLOAT_DTYPES);

}  // namespace
}  // namespace lumen
