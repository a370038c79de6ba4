// One element of QuantizeLinear and DequantizeLinear as ONNX's reference computes it, shared by
// the reference kernels and the CPU kernels' general loops (the CPU's float32 fast path computes
// the same in vectors: backends/cpu/kernels/quantize_f32.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/common/binary_functors.h"
#include "backends/common/narrow_types.h"
#include "lumen/dtype.h"

namespace lumen::quant {

// x / scale, the value a quantization rounds: in the wider of x's and the scale's precisions, as
// NumPy computes it; a scale of x's own dtype rounds the quotient to that dtype (float16 x and
// scale: a float16 quotient).
template <class T>
double scaled(T x, double scale, DType scale_dtype) {
  const auto q = bin::load(x) / static_cast<bin::Compute<T>>(scale);
  if (scale_dtype == dtype_of<T>) return double(bin::load(bin::store<T>(q)));
  if (scale_dtype == DType::Float64) return double(bin::load(x)) / scale;
  return double(q);
}

// Rounded half to even (the default rounding mode) and saturated to integer type Q; NaN: 0.
template <class Q>
Q saturate_round(double v) {
  if (std::isnan(v)) return Q(0);
  const double lo = double(std::numeric_limits<Q>::min()),
               hi = double(std::numeric_limits<Q>::max());
  return Q(std::clamp(std::nearbyint(v), lo, hi));
}

// The bits of narrow output dtype y for `scaled`: int4/int2 rounded, plus the zero point,
// saturated; float8 the scaled value cast (ONNX requires a zero point of 0), saturating unless
// `saturate` is false; float4e2m1 scaled + zero point in float32, cast saturating.
inline uint8_t to_narrow(DType y, double scaled, double zero, bool saturate) {
  if (const auto *f = narrow::int_format(y))
    return narrow::int_saturate(*f, std::nearbyint(scaled) + zero);
  const auto *f = narrow::float_format(y);
  if (y == DType::Float4E2M1)
    return narrow::double_to_float(*f, static_cast<float>(scaled) + static_cast<float>(zero), true);
  return narrow::double_to_float(*f, scaled, saturate);
}

// (x - zero point) in float32 times the scale: in double for a float64 output, else the float32
// product rounded once to O.
template <class O>
O dequantized(float x, double zero, double scale) {
  const float d = x - static_cast<float>(zero);
  if constexpr (std::is_same_v<O, double>)
    return double(d) * scale;
  else if constexpr (std::is_same_v<O, float>)
    return d * float(scale);
  else
    return bin::convert<O>(double(d * float(scale)));
}

}  // namespace lumen::quant
