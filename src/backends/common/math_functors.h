// Element-wise math shared by the backends' kernels (trigonometric, hyperbolic, rounding,
// reciprocal...): one functor per op, constructed from the attributes, applied to the compute
// type C (float for float32, double for float64).
#pragma once

#include <cmath>

#include "lumen/attributes.h"

namespace lumen::math {

#define LUMEN_SIMPLE_FUNCTOR(Name, expr) \
  struct Name {                          \
    explicit Name(const Attributes &) {} \
    template <class C>                   \
    C operator()(C x) const {            \
      return C(expr);                    \
    }                                    \
  };

LUMEN_SIMPLE_FUNCTOR(Sin, std::sin(x))
LUMEN_SIMPLE_FUNCTOR(Cos, std::cos(x))
LUMEN_SIMPLE_FUNCTOR(Tan, std::tan(x))
LUMEN_SIMPLE_FUNCTOR(Asin, std::asin(x))
LUMEN_SIMPLE_FUNCTOR(Acos, std::acos(x))
LUMEN_SIMPLE_FUNCTOR(Atan, std::atan(x))
LUMEN_SIMPLE_FUNCTOR(Sinh, std::sinh(x))
LUMEN_SIMPLE_FUNCTOR(Cosh, std::cosh(x))
LUMEN_SIMPLE_FUNCTOR(Asinh, std::asinh(x))
LUMEN_SIMPLE_FUNCTOR(Acosh, std::acosh(x))
LUMEN_SIMPLE_FUNCTOR(Atanh, std::atanh(x))
LUMEN_SIMPLE_FUNCTOR(Erf, std::erf(x))
LUMEN_SIMPLE_FUNCTOR(Reciprocal, C(1) / x)
LUMEN_SIMPLE_FUNCTOR(Floor, std::floor(x))
LUMEN_SIMPLE_FUNCTOR(Ceil, std::ceil(x))
LUMEN_SIMPLE_FUNCTOR(Round, std::nearbyint(x))  // default rounding mode: half to even
LUMEN_SIMPLE_FUNCTOR(Softsign, x / (C(1) + std::abs(x)))
// mish(x) = x * tanh(softplus(x)); log1p(exp(x)) overflows to inf for large x, where tanh is 1.
LUMEN_SIMPLE_FUNCTOR(Mish, x *std::tanh(x > C(20) ? x : std::log1p(std::exp(x))))

#undef LUMEN_SIMPLE_FUNCTOR

}  // namespace lumen::math
