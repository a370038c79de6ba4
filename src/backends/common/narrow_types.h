// Scalar conversions of the narrow element types (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0,
// float4 e2m1, int4/uint4, int2/uint2) to and from double, with the semantics of ml_dtypes (which
// ONNX's reference implementation and test data use). Lumen stores each element in one byte: the
// type's bit pattern in the low bits, upper bits zero.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "lumen/dtype.h"

namespace lumen::narrow {

struct FloatFormat {
  int mant, exp, bias;
  uint8_t max_code;  // the largest finite magnitude's code (sign bit clear)
  enum Kind { FN, FNUZ, IEEE, NoSpecials } kind;
};

inline const FloatFormat *float_format(DType dtype) {
  static constexpr FloatFormat e4m3fn{3, 4, 7, 0x7E, FloatFormat::FN};
  static constexpr FloatFormat e4m3fnuz{3, 4, 8, 0x7F, FloatFormat::FNUZ};
  static constexpr FloatFormat e5m2{2, 5, 15, 0x7B, FloatFormat::IEEE};
  static constexpr FloatFormat e5m2fnuz{2, 5, 16, 0x7F, FloatFormat::FNUZ};
  static constexpr FloatFormat e2m1{1, 2, 1, 0x7, FloatFormat::NoSpecials};
  switch (dtype) {
    case DType::Float8E4M3FN:
      return &e4m3fn;
    case DType::Float8E4M3FNUZ:
      return &e4m3fnuz;
    case DType::Float8E5M2:
      return &e5m2;
    case DType::Float8E5M2FNUZ:
      return &e5m2fnuz;
    case DType::Float4E2M1:
      return &e2m1;
    default:
      return nullptr;
  }
}

// Integer range of int4/uint4/int2/uint2 (bits: the width).
struct IntFormat {
  int bits;
  int64_t min, max;
};
inline const IntFormat *int_format(DType dtype) {
  static constexpr IntFormat i4{4, -8, 7}, u4{4, 0, 15}, i2{2, -2, 1}, u2{2, 0, 3};
  switch (dtype) {
    case DType::Int4:
      return &i4;
    case DType::UInt4:
      return &u4;
    case DType::Int2:
      return &i2;
    case DType::UInt2:
      return &u2;
    default:
      return nullptr;
  }
}

inline double float_to_double(const FloatFormat &f, uint8_t bits) {
  const int width = 1 + f.mant + f.exp;
  const bool neg = (bits >> (width - 1)) & 1u;
  const uint8_t mag = bits & uint8_t((1u << (width - 1)) - 1u);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.kind == FloatFormat::FNUZ && neg && mag == 0) return nan;
  if (f.kind == FloatFormat::FN && mag == 0x7F) return nan;
  const unsigned e = mag >> f.mant, m = mag & ((1u << f.mant) - 1u);
  if (f.kind == FloatFormat::IEEE && e == (1u << f.exp) - 1u)
    return m ? nan
             : (neg ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity());
  const double v = e == 0 ? std::ldexp(double(m), 1 - f.bias - f.mant)
                          : std::ldexp(double(m + (1u << f.mant)), int(e) - f.bias - f.mant);
  return neg ? -v : v;
}

// Rounds to nearest, ties to even. saturate: out-of-range values (and infinities) become the
// largest finite value; otherwise they become infinity (e5m2) or NaN (types without infinity;
// float4e2m1, which has neither, always saturates like ml_dtypes).
inline uint8_t double_to_float(const FloatFormat &f, double d, bool saturate) {
  const int width = 1 + f.mant + f.exp;
  const uint8_t sign_bit = uint8_t(1u << (width - 1));
  const bool neg = std::signbit(d);
  const uint8_t sign = neg ? sign_bit : 0;
  auto nan = [&]() -> uint8_t {
    switch (f.kind) {
      case FloatFormat::FN:
        return uint8_t(sign | 0x7F);
      case FloatFormat::FNUZ:
        return 0x80;
      case FloatFormat::IEEE:
        return uint8_t(sign | 0x7E);
      default:
        return 0;
    }
  };
  auto overflow = [&]() -> uint8_t {
    if (saturate || f.kind == FloatFormat::NoSpecials) return uint8_t(sign | f.max_code);
    if (f.kind == FloatFormat::IEEE) return uint8_t(sign | 0x7C);
    return nan();
  };
  if (std::isnan(d)) return nan();
  if (std::isinf(d)) return overflow();
  const double a = std::fabs(d);
  int64_t code;
  if (a < std::ldexp(1.0, 1 - f.bias)) {  // subnormal range (the result may be the smallest normal)
    code = static_cast<int64_t>(std::nearbyint(std::ldexp(a, f.bias - 1 + f.mant)));
  } else {
    int e = 0;
    std::frexp(a, &e);  // a = x * 2^e, x in [0.5, 1)
    int unbiased = e - 1;
    double m = std::nearbyint(std::ldexp(a, f.mant - unbiased));  // in [2^mant, 2^(mant+1)]
    if (m >= std::ldexp(1.0, f.mant + 1)) {
      m = std::ldexp(1.0, f.mant);
      ++unbiased;
    }
    if (unbiased + f.bias > 64) return overflow();
    code = (int64_t(unbiased + f.bias) << f.mant) | (int64_t(m) - (int64_t(1) << f.mant));
  }
  if (code > f.max_code) return overflow();
  if (code == 0 && f.kind == FloatFormat::FNUZ) return 0;  // no negative zero
  return uint8_t(sign | uint8_t(code));
}

inline double e8m0_to_double(uint8_t bits) {
  if (bits == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, int(bits) - 127);
}

// float -> e8m0 (a power of two, 2^-127 .. 2^127): round_mode "up" (default), "down" or
// "nearest" on the float32 bits, as onnx.numpy_helper.to_float8e8m0 does.
inline uint8_t float_to_e8m0(float x, bool saturate, int round_mode /*0 up, 1 down, 2 nearest*/) {
  uint32_t f;
  static_assert(sizeof f == sizeof x);
  __builtin_memcpy(&f, &x, sizeof f);
  unsigned exponent = (f >> 23) & 0xFFu;
  if (exponent == 0xFF) return 0xFF;
  bool round_up = false;
  if (round_mode == 2) {
    const bool g = f & 0x400000u, r = f & 0x200000u, s = f & 0x1FFFFFu, lsb = exponent > 0;
    round_up = g && (r || s || lsb);
  } else if (round_mode == 0) {
    round_up = (f & 0x7FFFFFu) != 0;
  }
  if (round_up && !(saturate && exponent == 0xFE)) ++exponent;
  return exponent > 0xFF ? 0xFF : uint8_t(exponent);
}

// Sign-extended value of an int4/uint4/int2/uint2 byte.
inline int64_t int_value(const IntFormat &f, uint8_t bits) {
  const unsigned mask = (1u << f.bits) - 1u;
  const unsigned v = bits & mask;
  if (f.min < 0 && (v & (1u << (f.bits - 1)))) return int64_t(v) - int64_t(mask + 1);
  return v;
}
// Integer -> narrow integer: wraps around (the low bits), like NumPy integer casts.
inline uint8_t int_from_int(const IntFormat &f, int64_t v) {
  return uint8_t(uint64_t(v) & ((1u << f.bits) - 1u));
}
// Float -> narrow integer as ml_dtypes does it: truncates toward zero; NaN, infinities and values
// outside the type's range give 0.
inline uint8_t int_from_float(const IntFormat &f, double v) {
  if (!std::isfinite(v)) return 0;
  const double t = std::trunc(v);
  if (t < double(f.min) || t > double(f.max)) return 0;
  return int_from_int(f, int64_t(t));
}
// Saturating round-to-nearest-even (QuantizeLinear).
inline uint8_t int_saturate(const IntFormat &f, double v) {
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);
  if (r < double(f.min)) r = double(f.min);
  if (r > double(f.max)) r = double(f.max);
  return int_from_int(f, int64_t(r));
}

// Cast's round_mode attribute for float8e8m0 targets: 0 up, 1 down, 2 nearest; -1 for another
// name.
inline int round_mode(std::string_view name) {
  return name == "up" ? 0 : name == "down" ? 1 : name == "nearest" ? 2 : -1;
}

// A value on its way through a cast that involves a narrow type: integers (and bool, int4 ...)
// exactly as int64, everything else as double.
struct Scalar {
  bool integral;
  int64_t i;
  double d;
  double as_double() const { return integral ? double(i) : d; }
};

// A computed value of a standard dtype (bin::load's result) as a Scalar: integers exactly.
template <class V>
Scalar scalar_of(V v) {
  if constexpr (std::is_integral_v<V>)
    return {true, static_cast<int64_t>(v), 0.0};
  else
    return {false, 0, static_cast<double>(v)};
}

// Element `bits` of narrow dtype `dtype` as a Scalar.
inline Scalar load(DType dtype, uint8_t bits) {
  if (const auto *f = int_format(dtype)) return {true, int_value(*f, bits), 0.0};
  if (const auto *f = float_format(dtype)) return {false, 0, float_to_double(*f, bits)};
  return {false, 0, e8m0_to_double(bits)};  // Float8E8M0
}

// v as narrow dtype `dtype`: `saturate` for the float8 targets, `round_mode` (0 up, 1 down,
// 2 nearest) for float8e8m0.
inline uint8_t store(DType dtype, const Scalar &v, bool saturate, int round_mode) {
  if (const auto *f = int_format(dtype))
    return v.integral ? int_from_int(*f, v.i) : int_from_float(*f, v.d);
  if (const auto *f = float_format(dtype)) return double_to_float(*f, v.as_double(), saturate);
  return float_to_e8m0(static_cast<float>(v.as_double()), saturate, round_mode);
}

}  // namespace lumen::narrow
