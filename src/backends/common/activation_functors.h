// The scalar math of each element-wise activation, shared by the reference and CPU kernels so both
// compute the same formula (and so agree to the bit when neither vectorizes differently). Each
// functor is built from the node's attributes once per kernel call and then applied per element.
// Attribute defaults follow ONNX.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <limits>
#include <string>

#include "lumen/attributes.h"

namespace lumen::act {

// NaN passes through (x < 0 is false for NaN), like PyTorch.
template <class T>
struct Relu {
  explicit Relu(const Attributes &) {}
  T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

template <class T>
struct LeakyRelu {
  T alpha;
  explicit LeakyRelu(const Attributes &a) : alpha(T(a.get_float("alpha", 0.01))) {}
  T operator()(T x) const { return x < T(0) ? alpha * x : x; }
};

// Split by sign so exp never overflows into inf/inf.
template <class T>
inline T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

template <class T>
struct Sigmoid {
  explicit Sigmoid(const Attributes &) {}
  T operator()(T x) const { return sigmoid(x); }
};

template <class T>
struct Tanh {
  explicit Tanh(const Attributes &) {}
  T operator()(T x) const { return std::tanh(x); }
};

// approximate="none": x * Phi(x) with the exact normal CDF; "tanh": the tanh approximation.
template <class T>
struct Gelu {
  bool tanh_approx;
  explicit Gelu(const Attributes &a) : tanh_approx(a.get_string("approximate", "none") == "tanh") {}
  T operator()(T x) const {
    if (tanh_approx) {
      const T k = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));  // 1 / sqrt(2)
  }
};

template <class T>
struct Silu {
  explicit Silu(const Attributes &) {}
  T operator()(T x) const { return x * sigmoid(x); }
};

template <class T>
struct Elu {
  T alpha;
  explicit Elu(const Attributes &a) : alpha(T(a.get_float("alpha", 1.0))) {}
  T operator()(T x) const { return x > T(0) ? x : alpha * std::expm1(x); }
};

// log(1 + exp(x)) rewritten as max(x, 0) + log1p(exp(-|x|)) so large |x| neither overflows nor
// loses the small term.
template <class T>
struct Softplus {
  explicit Softplus(const Attributes &) {}
  T operator()(T x) const { return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x))); }
};

template <class T>
inline T clamp01(T v) {
  v = v < T(0) ? T(0) : v;
  return v > T(1) ? T(1) : v;
}

template <class T>
struct HardSigmoid {
  T alpha, beta;
  explicit HardSigmoid(const Attributes &a)
      : alpha(T(a.get_float("alpha", 0.2))), beta(T(a.get_float("beta", 0.5))) {}
  T operator()(T x) const { return clamp01(alpha * x + beta); }
};

// ONNX HardSwish: x * hard_sigmoid(x) with alpha = 1/6, beta = 0.5.
template <class T>
struct HardSwish {
  explicit HardSwish(const Attributes &) {}
  T operator()(T x) const { return x * clamp01(x * T(1.0 / 6.0) + T(0.5)); }
};

// min(max(x, lo), hi), as np.clip: when lo > hi every element becomes hi. NaN passes through.
template <class T>
struct Clip {
  T lo, hi;
  explicit Clip(const Attributes &a)
      : lo(bound(a.get_float("min", -std::numeric_limits<double>::infinity()))),
        hi(bound(a.get_float("max", std::numeric_limits<double>::infinity()))) {}
  T operator()(T x) const {
    const T v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
  // Integer bounds are clamped to T's range first: casting an out-of-range double is undefined.
  static T bound(double v) {
    if constexpr (std::is_integral_v<T>) {
      v = std::clamp(v, double(std::numeric_limits<T>::lowest()),
                     double(std::numeric_limits<T>::max()));
    }
    return T(v);
  }
};

template <class T>
struct Exp {
  explicit Exp(const Attributes &) {}
  T operator()(T x) const { return std::exp(x); }
};

template <class T>
struct Log {
  explicit Log(const Attributes &) {}
  T operator()(T x) const { return std::log(x); }
};

template <class T>
struct Sqrt {
  explicit Sqrt(const Attributes &) {}
  T operator()(T x) const { return std::sqrt(x); }
};

template <class T>
struct Neg {
  explicit Neg(const Attributes &) {}
  T operator()(T x) const {
    // Integers wrap (-INT_MIN == INT_MIN) instead of overflowing.
    if constexpr (std::is_integral_v<T>) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
    else return -x;
  }
};

template <class T>
struct Abs {
  explicit Abs(const Attributes &) {}
  T operator()(T x) const { return x < T(0) ? Neg<T>(Attributes{})(x) : x; }
};

}  // namespace lumen::act
