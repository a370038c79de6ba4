// Element-wise math shared by the backends' kernels (trigonometric, hyperbolic, rounding,
// reciprocal...): one functor per op, constructed from the attributes, applied to the compute
// type C (float for float32, double for float64).
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/common/binary_functors.h"
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

// Activations with attributes, computed in double.
struct Selu {
  double alpha, gamma;
  explicit Selu(const Attributes &a)
      : alpha(a.get_float("alpha", 1.67326319217681884765625)),
        gamma(a.get_float("gamma", 1.05070102214813232421875)) {}
  template <class C>
  C operator()(C x) const {
    return C(x > C(0) ? gamma * double(x) : gamma * (alpha * std::exp(double(x)) - alpha));
  }
};
struct Celu {
  double alpha;
  explicit Celu(const Attributes &a) : alpha(a.get_float("alpha", 1.0)) {}
  template <class C>
  C operator()(C x) const {
    return C(std::max(0.0, double(x)) + std::min(0.0, alpha * (std::exp(double(x) / alpha) - 1.0)));
  }
};
struct ThresholdedRelu {
  double alpha;
  explicit ThresholdedRelu(const Attributes &a) : alpha(a.get_float("alpha", 1.0)) {}
  template <class C>
  C operator()(C x) const {
    return double(x) > alpha ? x : C(0);
  }
};
struct Sign {
  explicit Sign(const Attributes &) {}
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(x)) return x;
    return x > C(0) ? C(1) : x < C(0) ? C(-1) : C(0);
  }
};
// shrink: x < -lambd -> x + bias; x > lambd -> x - bias; else 0.
struct Shrink {
  double bias, lambd;
  explicit Shrink(const Attributes &a)
      : bias(a.get_float("bias", 0.0)), lambd(a.get_float("lambd", 0.5)) {}
  template <class C>
  C operator()(C x) const {
    const double v = double(x);
    if (v < -lambd) return bin::convert<C>(v + bias);
    if (v > lambd) return bin::convert<C>(v - bias);
    return C(0);
  }
};

}  // namespace lumen::math
