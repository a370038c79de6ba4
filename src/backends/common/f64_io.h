// Reference kernels that compute in double: read any numeric tensor into doubles, and write
// doubles back to a floating-point tensor, rounding once (float16/bfloat16 included).
#pragma once

#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen {

inline std::vector<double> to_f64(const KernelContext &ctx, const Tensor &t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const bool ok = bin::visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(bin::load<T>(p[i]));
  });
  if (!ok) ctx.fail("unsupported dtype ", dtype_name(t.dtype()));
  return out;
}

inline void from_f64(const KernelContext &ctx, Tensor &t, const std::vector<double> &v) {
  const bool ok = bin::visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> ||
                  std::is_same_v<T, BFloat16>) {
      T *p = t.data<T>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = bin::store<T>(bin::Compute<T>(v[i]));
    } else {
      ctx.fail("unsupported output dtype ", dtype_name(t.dtype()));
    }
  });
  if (!ok) ctx.fail("unsupported dtype ", dtype_name(t.dtype()));
}

}  // namespace lumen
