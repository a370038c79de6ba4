// A numeric tensor element read as an int64 index or count (one_hot's indices and depth).
#pragma once

#include <cstdint>

#include "lumen/error.h"
#include "lumen/tensor.h"

namespace lumen {

// Element i as int64: floats truncate toward zero; NaN and floats beyond int64's range, which
// have no int64 value, give `fallback`. Fails for dtypes other than floats and 8-64 bit integers.
inline int64_t index_value(const Tensor &t, int64_t i, int64_t fallback) {
  const auto from_float = [&](double v) {
    return v > -9.2e18 && v < 9.2e18 ? static_cast<int64_t>(v) : fallback;
  };
  switch (t.dtype()) {
    case DType::Float32:
      return from_float(t.data<float>()[i]);
    case DType::Float64:
      return from_float(t.data<double>()[i]);
    case DType::Int8:
      return t.data<int8_t>()[i];
    case DType::Int16:
      return t.data<int16_t>()[i];
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int64:
      return t.data<int64_t>()[i];
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    default:
      fail("unsupported dtype ", dtype_name(t.dtype()));
  }
}

}  // namespace lumen
