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

#include "lumen/dtype.h"
#include "lumen/shape.h"

namespace lumen::bin {

// --- Half-precision storage types ------------------------------------------------------------
// Float16/BFloat16 are computed in float: load() widens, store() rounds to nearest, ties to even.

// Rounds a finite or non-finite double to the IEEE-like format with `mant` mantissa bits and
// `exp` exponent bits (round to nearest, ties to even; overflow gives infinity; NaN stays NaN).
inline uint16_t round_to_small_float(double d, int mant, int exp) {
  const uint16_t sign = std::signbit(d) ? uint16_t(1u << (mant + exp)) : uint16_t(0);
  const uint16_t exp_mask = uint16_t(((1u << exp) - 1u) << mant);
  if (std::isnan(d)) return uint16_t(sign | exp_mask | (1u << (mant - 1)));
  const double a = std::fabs(d);
  const int bias = (1 << (exp - 1)) - 1;
  // Halfway between the largest finite value and 2^(bias+1) rounds up to infinity.
  if (a >= std::ldexp(2.0 - std::ldexp(1.0, -(mant + 1)), bias)) return uint16_t(sign | exp_mask);
  if (a < std::ldexp(1.0, 1 - bias)) {  // subnormal: a multiple of 2^(1 - bias - mant)
    const double m = std::nearbyint(std::ldexp(a, bias - 1 + mant));
    return uint16_t(sign | uint16_t(m));  // m == 2^mant encodes the smallest normal, as it should
  }
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int unbiased = e - 1;
  double m = std::nearbyint(std::ldexp(a, mant - unbiased));  // in [2^mant, 2^(mant+1)]
  if (m >= std::ldexp(1.0, mant + 1)) {
    m = std::ldexp(1.0, mant);
    ++unbiased;
  }
  return uint16_t(sign | uint16_t((unbiased + bias) << mant) |
                  uint16_t(uint32_t(m) - (1u << mant)));
}

inline float small_float_to_float(uint16_t bits, int mant, int exp) {
  const bool neg = (bits >> (mant + exp)) & 1u;
  const uint32_t e = (bits >> mant) & ((1u << exp) - 1u);
  const uint32_t m = bits & ((1u << mant) - 1u);
  const int bias = (1 << (exp - 1)) - 1;
  float v;
  if (e == (1u << exp) - 1u)
    v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (e == 0)
    v = std::ldexp(float(m), 1 - bias - mant);
  else
    v = std::ldexp(float(m + (1u << mant)), int(e) - bias - mant);
  return neg ? -v : v;
}

inline float half_to_float(Float16 h) {
  return small_float_to_float(h.bits, 10, 5);
}
inline Float16 double_to_half(double d) {
  return Float16{round_to_small_float(d, 10, 5)};
}
inline float bfloat16_to_float(BFloat16 h) {
  return std::bit_cast<float>(uint32_t(h.bits) << 16);
}
inline BFloat16 double_to_bfloat16(double d) {
  return BFloat16{round_to_small_float(d, 7, 8)};
}

// The type a storage type T is computed in.
template <class T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<Float16> {
  using type = float;
};
template <>
struct ComputeOf<BFloat16> {
  using type = float;
};
template <class T>
using Compute = typename ComputeOf<T>::type;

template <class T>
inline Compute<T> load(T v) {
  if constexpr (std::is_same_v<T, Float16>)
    return half_to_float(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bfloat16_to_float(v);
  else
    return v;
}
template <class T>
inline T store(Compute<T> v) {
  if constexpr (std::is_same_v<T, Float16>)
    return double_to_half(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return double_to_bfloat16(v);
  else
    return v;
}

// Calls f(T{}) with the C++ type of `dtype`; returns false when dtype is not one of them.
template <class F>
bool visit_dtype(DType dtype, F &&f) {
  switch (dtype) {
    case DType::Float32:
      f(float{});
      return true;
    case DType::Float64:
      f(double{});
      return true;
    case DType::Float16:
      f(Float16{});
      return true;
    case DType::BFloat16:
      f(BFloat16{});
      return true;
    case DType::Int8:
      f(int8_t{});
      return true;
    case DType::Int16:
      f(int16_t{});
      return true;
    case DType::Int32:
      f(int32_t{});
      return true;
    case DType::Int64:
      f(int64_t{});
      return true;
    case DType::UInt8:
      f(uint8_t{});
      return true;
    case DType::UInt16:
      f(uint16_t{});
      return true;
    case DType::UInt32:
      f(uint32_t{});
      return true;
    case DType::UInt64:
      f(uint64_t{});
      return true;
    case DType::Bool:
      f(bool{});
      return true;
    default:  // storage-only types (float8, int4, ...) have no arithmetic
      return false;
  }
}

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
