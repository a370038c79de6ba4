// The requantization multiplier of QLinearMatMul / QLinearConv, x_scale * w_scale / y_scale,
// formed in the scales' own precision (float16 scales round as float16, float32 as float32), as
// every backend's kernels must to give the same integers.
#pragma once

#include <type_traits>

#include "core/scalar.h"
#include "lumen/tensor.h"

namespace lumen {

// x_scale[0] * w * y_scale[0]^-1 in the scales' precision; 0 for a scale dtype that is not a
// float type (inference rejects those).
inline double requant_multiplier(const Tensor &x_scale, double w, const Tensor &y_scale) {
  double m = 0;
  scalar::visit_dtype(x_scale.dtype(), [&](auto tag) {
    using S = decltype(tag);
    if constexpr (std::is_floating_point_v<scalar::Compute<S>>) {
      using C = scalar::Compute<S>;
      const C prod = scalar::load(scalar::store<S>(C(scalar::value_as_double(x_scale, 0)) * C(w)));
      m = double(scalar::load(scalar::store<S>(prod / C(scalar::value_as_double(y_scale, 0)))));
    }
  });
  return m;
}

}  // namespace lumen
