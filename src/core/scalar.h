// The C++ types of the arithmetic dtypes, and how the half-precision ones are computed: the scalar
// layer under the kernels' functors (backends/common/*_functors.h) and the passes that read
// constant values. Float16/BFloat16 are computed in float: load() widens, store() rounds to
// nearest, ties to even.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "lumen/dtype.h"
#include "lumen/tensor.h"

namespace lumen::scalar {

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

// Calls f(T{}) for the dtypes with native C++ arithmetic (float, double and the 8- to 64-bit
// integers); returns false for the others (bool, the 16-bit floats, strings, narrow types).
template <class F>
bool visit_numeric(DType dtype, F &&f) {
  bool numeric = false;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      numeric = true;
      f(tag);
    }
  });
  return numeric;
}

// Element i of a contiguous tensor of an arithmetic dtype as double (0 for other dtypes).
inline double value_as_double(const Tensor &t, int64_t i) {
  double v = 0;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    v = double(load<T>(t.data<T>()[i]));
  });
  return v;
}

// Every element of a contiguous tensor of an arithmetic dtype as double (zeros for other dtypes).
inline std::vector<double> values_as_double(const Tensor &t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(load<T>(p[i]));
  });
  return out;
}

}  // namespace lumen::scalar
