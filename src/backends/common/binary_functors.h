// The scalar math of the broadcasting binary ops, shared by the reference and CPU kernels.
//
// Integer semantics: add/sub/mul wrap around on overflow (computed in the unsigned type, so never
// UB); div truncates toward zero like C and ONNX, and INT_MIN / -1 wraps to INT_MIN. Division by
// zero must be rejected by the caller before calling Div on integers (it is an Error, not UB).
// maximum/minimum propagate NaN, like NumPy.
#pragma once

#include <cmath>
#include <type_traits>

namespace lumen::bin {

template <class T>
inline constexpr bool kIsInt = std::is_integral_v<T>;

template <class T>
using Unsigned = std::make_unsigned_t<T>;

struct Add {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>)
      return T(Unsigned<T>(a) + Unsigned<T>(b));
    else
      return a + b;
  }
};

struct Sub {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>)
      return T(Unsigned<T>(a) - Unsigned<T>(b));
    else
      return a - b;
  }
};

struct Mul {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>)
      return T(Unsigned<T>(a) * Unsigned<T>(b));
    else
      return a * b;
  }
};

struct Div {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>)
      return b == T(-1) ? T(Unsigned<T>(0) - Unsigned<T>(a)) : T(a / b);
    else
      return a / b;
  }
};

struct Pow {
  template <class T>
  T operator()(T a, T b) const {
    return std::pow(a, b);
  }
};

// `a != a` is the NaN test (kept as a comparison so the loops still vectorize).
struct Maximum {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>)
      return a > b ? a : b;
    else
      return (a > b || a != a) ? a : b;
  }
};

struct Minimum {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>)
      return a < b ? a : b;
    else
      return (a < b || a != a) ? a : b;
  }
};

}  // namespace lumen::bin
