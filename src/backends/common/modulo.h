// ONNX Mod's value rule, shared by the backends' kernels.
#pragma once

#include <cmath>
#include <type_traits>

namespace lumen {

// NumPy's mod (fmod = 0): the result takes the divisor's sign; C's fmod (fmod = 1): the dividend's.
template <class C>
C mod_value(C a, C b, bool fmod) {
  if constexpr (std::is_floating_point_v<C>) {
    C r = std::fmod(a, b);
    if (fmod || b == C(0)) return r;
    if (r != C(0)) {
      if ((b < C(0)) != (r < C(0))) r += b;
    } else {
      r = std::copysign(C(0), b);
    }
    return r;
  } else {
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return C(0);  // avoids INT_MIN % -1 overflow
      C r = C(a % b);
      if (!fmod && r != C(0) && ((r < C(0)) != (b < C(0)))) r = C(r + b);
      return r;
    } else {
      return C(a % b);
    }
  }
}

}  // namespace lumen
