// The scalar math of each element-wise activation, shared by the reference and CPU kernels so both
// compute the same formula (and so agree to the bit when neither vectorizes differently). Each
// functor is built from the node's attributes once per kernel call and then applied per element.
// Attribute defaults follow ONNX.
//
// float32 exp, tanh, sigmoid and erf use the branch-free polynomial versions in act::f32 below
// instead of libm: the same accuracy class (a few ulp; tests/unit/fast_math_test.cc bounds them
// against double-precision libm) but written so a loop over them vectorizes. float64 uses libm.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "lumen/attributes.h"

// Always inlined: these run inside loops that are compiled once per ISA and vectorized. An
// out-of-line copy (GCC emitted one when some caller's inlining budget ran out) is a scalar call
// per element, and since the vectorized loops are templates the linker keeps one copy of, a single
// translation unit that gave up made every caller slow (SiLU epilogues 7x slower).
#if defined(__GNUC__)
#define LUMEN_ACT_ALWAYS __attribute__((always_inline))
#else
#define LUMEN_ACT_ALWAYS
#endif
#define LUMEN_ACT_INLINE inline LUMEN_ACT_ALWAYS

namespace lumen::act {

namespace f32 {

// exp(x), relative error < 2 ulp. x = n ln2 + r with |r| <= ln2 / 2 (n rounded by the 1.5 * 2^23
// trick, which also leaves n in the low mantissa bits), exp(r) by a degree-6 polynomial, and
// 2^n applied as two factors so results that are subnormal or overflow come out right. NaN
// propagates through the polynomial; large |x| give 0 or inf.
LUMEN_ACT_INLINE float exp(float x) {
  x = x < -104.0f ? -104.0f : x;  // comparisons keep NaN
  x = x > 89.0f ? 89.0f : x;
  const float shifted = x * 1.44269504f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  float r = x - n * 0.693359375f;  // ln2 split in two for an exact first product
  r = r - n * -2.12194440e-4f;
  const float q =
      0.5f + r * (0.166665763f + r * (0.041666463f + r * (0.00836317614f + r * 0.00139336858f)));
  const float p = 1.0f + r + r * r * q;
  const int32_t ni = int32_t(std::bit_cast<uint32_t>(shifted) - 0x4B400000u);
  const int32_t e1 = ni >> 1, e2 = ni - e1;
  const float s1 = std::bit_cast<float>((uint32_t(e1) + 127u) << 23);
  const float s2 = std::bit_cast<float>((uint32_t(e2) + 127u) << 23);
  return p * s1 * s2;
}

// exp(x) for a denominator 1 + exp(x): the same polynomial as exp() with x clamped to
// [-87.3, 88.7] and 2^n as one factor, about half of exp()'s instructions (SiLU in EfficientNet's
// conv epilogues: 21% of its time with exp()). Below -87.3 it gives exp(-87.3), which leaves
// 1 + exp(x) at 1; from 88.03 up 2^n is 2^128, which is the bit pattern of inf, so 1 / (1 + e)
// is 0 (at most 6e-39 off) and x / (1 + e) is -0 for large negative x. NaN propagates.
LUMEN_ACT_INLINE float exp_for_denominator(float x) {
  x = x < -87.3f ? -87.3f : x;  // comparisons keep NaN
  x = x > 88.7f ? 88.7f : x;
  const float shifted = x * 1.44269504f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float q =
      0.5f + r * (0.166665763f + r * (0.041666463f + r * (0.00836317614f + r * 0.00139336858f)));
  const float p = 1.0f + r + r * r * q;
  const uint32_t biased_n = std::bit_cast<uint32_t>(shifted) - (0x4B400000u - 127u);
  return p * std::bit_cast<float>(biased_n << 23);
}

// 1 / (1 + exp(-x)): no cancellation on either side (1 + e >= 1), so relative accuracy holds
// wherever the result is a normal float.
LUMEN_ACT_INLINE float sigmoid(float x) {
  return 1.0f / (1.0f + exp_for_denominator(-x));
}

// x * sigmoid(x) with one division instead of a division and a product.
LUMEN_ACT_INLINE float silu(float x) {
  return x / (1.0f + exp_for_denominator(-x));
}

// Odd polynomial below 0.625 (where 1 - 2 / (e + 1) would cancel; x * (...) keeps -0), 1 - 2 /
// (exp(2|x|) + 1) above; exp overflowing to inf gives exactly 1.
LUMEN_ACT_INLINE float tanh(float x) {
  const float a = std::fabs(x), z = x * x;
  const float small =
      x * (1.0f + z * (-0.333333284f +
                       z * (0.133327827f +
                            z * (-0.0538524985f + z * (0.0210036393f + z * -0.00610494288f)))));
  const float big = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  return a < 0.625f ? small : (x < 0.0f ? -big : big);
}

// erf(x): x P(x^2) below 1; above, 1 - exp(-x^2) Q(|x|) with Q fitted to erfc(x) exp(x^2) on
// [0.95, 4] (erf rounds to 1 beyond 4). Absolute error < 1e-7, relative < 2e-7 near 0.
LUMEN_ACT_INLINE float erf(float x) {
  const float a = std::fabs(x), z = x * x;
  const float small =
      x *
      (1.12837911f +
       z * (-0.376123488f + z * (0.112803645f + z * (-0.0267163869f +
                                                     z * (0.00492327847f + z * -0.00056541065f)))));
  const float c = a > 4.0f ? 4.0f : a;  // keeps NaN
  const float t = c - 2.5f;
  const float q =
      0.21080634f +
      t * (-0.0743476599f +
           t * (0.0249384679f +
                t * (-0.00799896102f +
                     t * (0.00246492052f +
                          t * (-0.000739690964f +
                               t * (0.000214433923f +
                                    t * (-5.31321421e-05f +
                                         t * (1.35447335e-05f +
                                              t * (-6.4835167e-06f + t * 1.8265938e-06f)))))))));
  const float big = 1.0f - exp(-c * c) * q;
  return a < 1.0f ? small : (x < 0.0f ? -big : big);
}

}  // namespace f32

// exp/tanh/erf/sigmoid: the f32 polynomials for float, libm otherwise.
template <class T>
LUMEN_ACT_INLINE T exp(T x) {
  if constexpr (std::is_same_v<T, float>)
    return f32::exp(x);
  else
    return std::exp(x);
}
template <class T>
LUMEN_ACT_INLINE T tanh(T x) {
  if constexpr (std::is_same_v<T, float>)
    return f32::tanh(x);
  else
    return std::tanh(x);
}
template <class T>
LUMEN_ACT_INLINE T erf(T x) {
  if constexpr (std::is_same_v<T, float>)
    return f32::erf(x);
  else
    return std::erf(x);
}

// NaN passes through (x < 0 is false for NaN), like PyTorch.
template <class T>
struct Relu {
  explicit Relu(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

template <class T>
struct LeakyRelu {
  T alpha;
  explicit LeakyRelu(const Attributes &a) : alpha(T(a.get_float("alpha", 0.01))) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return x < T(0) ? alpha * x : x; }
};

// Split by sign so exp never overflows into inf/inf.
template <class T>
LUMEN_ACT_INLINE T sigmoid(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return f32::sigmoid(x);
  } else {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
}

template <class T>
struct Sigmoid {
  explicit Sigmoid(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return sigmoid(x); }
};

template <class T>
struct Tanh {
  explicit Tanh(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return act::tanh(x); }
};

// approximate="none": x * Phi(x) with the exact normal CDF; "tanh": the tanh approximation.
template <class T>
struct Gelu {
  bool tanh_approx;
  explicit Gelu(const Attributes &a) : tanh_approx(a.get_string("approximate", "none") == "tanh") {}
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    if (tanh_approx) {
      const T k = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + act::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + act::erf(x * T(0.7071067811865476)));  // 1 / sqrt(2)
  }
};

// The two GELU forms as separate functors, so a loop applying one has no branch inside (the
// fused-op epilogue picks one per node).
template <class T>
struct GeluErf {
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    return T(0.5) * x * (T(1) + act::erf(x * T(0.7071067811865476)));
  }
};

template <class T>
struct GeluTanh {
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    const T k = T(0.7978845608028654);  // sqrt(2 / pi)
    return T(0.5) * x * (T(1) + act::tanh(k * (x + T(0.044715) * x * x * x)));
  }
};

template <class T>
struct Silu {
  explicit Silu(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return f32::silu(x);
    else
      return x * sigmoid(x);
  }
};

template <class T>
struct Elu {
  T alpha;
  explicit Elu(const Attributes &a) : alpha(T(a.get_float("alpha", 1.0))) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return x > T(0) ? x : alpha * std::expm1(x); }
};

// log(1 + exp(x)) rewritten as max(x, 0) + log1p(exp(-|x|)) so large |x| neither overflows nor
// loses the small term.
template <class T>
struct Softplus {
  explicit Softplus(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x)));
  }
};

template <class T>
LUMEN_ACT_INLINE T clamp01(T v) {
  v = v < T(0) ? T(0) : v;
  return v > T(1) ? T(1) : v;
}

template <class T>
struct HardSigmoid {
  T alpha, beta;
  explicit HardSigmoid(const Attributes &a)
      : alpha(T(a.get_float("alpha", 0.2))), beta(T(a.get_float("beta", 0.5))) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return clamp01(alpha * x + beta); }
};

// ONNX HardSwish: x * hard_sigmoid(x) with alpha = 1/6, beta = 0.5. For float the lower clamp
// clears negative values by their sign bit: written as a comparison, GCC moved the product into
// both branches and vectorized it as 4 compares and 3 blends (27% of a MobileNetV3 1x1 conv's
// time). A NaN gate may become 0 that way; x is then NaN and so is the product.
template <class T>
struct HardSwish {
  explicit HardSwish(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    T gate = x * T(1.0 / 6.0) + T(0.5);
    if constexpr (std::is_same_v<T, float>) {
      const int32_t bits = std::bit_cast<int32_t>(gate);
      gate = std::bit_cast<float>(bits & ~(bits >> 31));
    } else {
      gate = gate < T(0) ? T(0) : gate;
    }
    return x * (gate > T(1) ? T(1) : gate);
  }
};

// min(max(x, lo), hi), as np.clip: when lo > hi every element becomes hi. NaN passes through.
template <class T>
struct Clip {
  T lo, hi;
  explicit Clip(const Attributes &a)
      : lo(bound(a.get_float("min", -std::numeric_limits<double>::infinity()))),
        hi(bound(a.get_float("max", std::numeric_limits<double>::infinity()))) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    const T v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
  // Integer bounds are clamped to T's range first: casting an out-of-range double is undefined,
  // and double(INT64_MAX) rounds up to 2^63, itself out of range. (Inference refuses NaN.)
  static T bound(double v) {
    if constexpr (std::is_integral_v<T>) {
      const double above = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1, exact
      if (v >= above) return std::numeric_limits<T>::max();
      if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    }
    return T(v);
  }
};

template <class T>
struct Exp {
  explicit Exp(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return act::exp(x); }
};

template <class T>
struct Erf {
  explicit Erf(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return act::erf(x); }
};

template <class T>
struct Log {
  explicit Log(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return std::log(x); }
};

template <class T>
struct Sqrt {
  explicit Sqrt(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return std::sqrt(x); }
};

template <class T>
struct Neg {
  explicit Neg(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const {
    // Integers wrap (-INT_MIN == INT_MIN) instead of overflowing.
    if constexpr (std::is_integral_v<T>)
      return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
    else
      return -x;
  }
};

template <class T>
struct Abs {
  explicit Abs(const Attributes &) {}
  LUMEN_ACT_ALWAYS T operator()(T x) const { return x < T(0) ? Neg<T>(Attributes{})(x) : x; }
};

}  // namespace lumen::act
