// The scalar math of the broadcasting binary ops, shared by the reference and CPU kernels.
//
// Integer semantics: add/sub/mul wrap around on overflow (computed in the unsigned type, so never
// UB); div truncates toward zero like C and ONNX, and INT_MIN / -1 wraps to INT_MIN. Division by
// zero must be rejected by the caller before calling Div on integers (it is an Error, not UB).
// maximum/minimum propagate NaN, like NumPy.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <array>
#include <vector>

#include "core/scalar.h"
#include "lumen/dtype.h"
#include "lumen/shape.h"

namespace lumen::bin {

// The scalar types and conversions (core/scalar.h), as bin::load, bin::visit_dtype, ...
using namespace scalar;

// Every numeric dtype (all but bool), for kernel registration.
#define LUMEN_NUMERIC_DTYPES                                                                       \
  ::lumen::DType::Float32, ::lumen::DType::Float64, ::lumen::DType::Float16,                       \
      ::lumen::DType::BFloat16, ::lumen::DType::Int8, ::lumen::DType::Int16,                       \
      ::lumen::DType::Int32, ::lumen::DType::Int64, ::lumen::DType::UInt8, ::lumen::DType::UInt16, \
      ::lumen::DType::UInt32, ::lumen::DType::UInt64

// The unsigned type integer arithmetic wraps in: at least `unsigned`, so uint16 * uint16 does not
// promote to (overflowing) int.
template <class T>
using Unsigned =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Float -> integer without UB: NaN gives 0, out-of-range values saturate.
template <class I>
I float_to_int(double v) {
  if (std::isnan(v)) return I(0);
  if (v <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(v);
}

// Converts a computed value (double, float or any integer) to storage type T.
template <class T, class V>
T convert(V v) {
  if constexpr (std::is_same_v<T, bool>)
    return v != V(0);
  else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<V>)
    return float_to_int<T>(double(v));
  else if constexpr (std::is_same_v<T, Float16>)
    return double_to_half(double(v));  // one rounding, straight from the value
  else if constexpr (std::is_same_v<T, BFloat16>)
    return double_to_bfloat16(double(v));
  else
    return T(v);
}

// Naive N-input broadcasting for reference kernels: calls f(i, offsets) for every output element
// i, where offsets[k] is the element of contiguous input k (right-aligned, size-1 dims repeat).
template <size_t N, class F>
void for_each_broadcast(const Shape &out, const std::array<const Shape *, N> &ins, F &&f) {
  const size_t rank = out.rank();
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    int64_t rem = i;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rem % out[d];
      rem /= out[d];
    }
    for (size_t k = 0; k < N; ++k) {
      const Shape &in = *ins[k];
      const size_t lead = rank - in.rank();
      int64_t offset = 0;
      for (size_t d = 0; d < in.rank(); ++d)
        offset = offset * in[d] + (in[d] == 1 ? 0 : index[lead + d]);
      offsets[k] = offset;
    }
    f(i, offsets);
  }
}

template <class T>
inline constexpr bool kIsInt = std::is_integral_v<T>;

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
      if constexpr (std::is_signed_v<T>)
        return b == T(-1) ? T(Unsigned<T>(0) - Unsigned<T>(a)) : T(a / b);
      else
        return T(a / b);
    else
      return a / b;
  }
};

// ONNX Pow: the result has the base's type; the exponent may have another type. Integer powers
// of integers are exact (wrapping); a negative integer exponent gives 1/a^n truncated.
struct Pow {
  template <class A, class B>
  A operator()(A a, B b) const {
    if constexpr (kIsInt<A> && kIsInt<B>) {
      if (b < B(0)) {
        if (a == A(1)) return A(1);
        if constexpr (std::is_signed_v<A>)
          if (a == A(-1)) return (b % 2 == 0) ? A(1) : A(-1);
        return A(0);
      }
      Unsigned<A> result = 1, base = Unsigned<A>(a);
      for (auto e = b; e > B(0); e /= 2) {
        if (e % 2) result = Unsigned<A>(result * base);
        base = Unsigned<A>(base * base);
      }
      return A(result);
    } else if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) {
      return std::pow(a, b);
    } else {
      return convert<A>(std::pow(double(a), double(b)));
    }
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

// PRelu: a where a >= 0, else a * slope (b); NaN passes through.
struct PRelu {
  template <class T>
  T operator()(T a, T b) const {
    return a < T(0) ? Mul{}(a, b) : a;
  }
};

// Bitwise ops of integers.
struct BitAnd {
  template <class T>
  requires std::is_integral_v<T> T operator()(T a, T b) const { return T(a & b); }
};
struct BitOr {
  template <class T>
  requires std::is_integral_v<T> T operator()(T a, T b) const { return T(a | b); }
};
struct BitXor {
  template <class T>
  requires std::is_integral_v<T> T operator()(T a, T b) const { return T(a ^ b); }
};
// ONNX BitShift: shifts outside [0, bits) give 0 (left) or the sign fill (right); a left shift
// of a signed value shifts its bit pattern.
template <bool kLeft>
struct Shift {
  template <class T>
  requires std::is_integral_v<T> T operator()(T a, T b) const {
    constexpr int bits = int(sizeof(T) * 8);
    using U = std::make_unsigned_t<T>;
    bool out_of_range = uint64_t(b) >= uint64_t(bits);
    if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || b < T(0);
    if (out_of_range) {
      if (kLeft) return T(0);
      if constexpr (std::is_signed_v<T>) return a < T(0) ? T(-1) : T(0);
      return T(0);
    }
    if (kLeft) return T(U(U(a) << int(b)));
    return T(a >> int(b));  // arithmetic for signed values (C++20)
  }
};
using ShiftLeft = Shift<true>;
using ShiftRight = Shift<false>;

// Comparisons, output bool (any dtype; NaN compares false, as in C).
struct Equal {
  template <class T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Less {
  template <class T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Greater {
  template <class T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct LessEqual {
  template <class T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterEqual {
  template <class T>
  bool operator()(T a, T b) const {
    return a >= b;
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

// Calls f(TA{}, TB{}) with the input types a binary op F takes for dtypes (da, db): both the same
// numeric type, or any numeric pair for Pow (its exponent may differ). Returns false for
// anything else (bool, mixed dtypes, storage-only types). Shared by every backend's binary
// kernels so they accept the same dtype pairs.
template <class F, class Fn>
bool visit_binary_dtypes(DType da, DType db, Fn &&f) {
  bool done = false;
  visit_dtype(da, [&](auto ta) {
    using TA = decltype(ta);
    if constexpr (!std::is_same_v<TA, bool>) {
      if constexpr (std::is_same_v<F, Pow>) {
        visit_dtype(db, [&](auto tb) {
          if constexpr (!std::is_same_v<decltype(tb), bool>) {
            f(ta, tb);
            done = true;
          }
        });
      } else if constexpr (std::is_invocable_v<F, TA, TA>) {  // bitwise ops: integers only
        if (da == db) {
          f(ta, ta);
          done = true;
        }
      }
    }
  });
  return done;
}

}  // namespace lumen::bin
