// Reference cast: one conversion per element through bin::convert (see binary_functors.h); the
// narrow types (float8, float4, int4, int2) go through narrow_types.h, with the `saturate`
// attribute (float8 targets) and `round_mode` (float8e8m0 targets).
#include "backends/common/binary_functors.h"
#include "backends/common/narrow_types.h"
#include "core/kernel.h"

#include <cstring>
#include <string>
#include <vector>

namespace lumen {
namespace {

void cast(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const DType from = x.dtype(), to = y.dtype();
  const int64_t n = y.numel();
  const bool saturate = ctx.attrs.get_int("saturate", 1) != 0;
  const std::string mode = ctx.attrs.get_string("round_mode", "up");
  const int round_mode = narrow::round_mode(mode);
  if (round_mode < 0) ctx.fail("round_mode must be 'up', 'down' or 'nearest', got '", mode, "'");

  if (from == to) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  if (is_narrow(from) || is_narrow(to)) {
    // Source elements as Scalars, then stored into the target.
    std::vector<narrow::Scalar> values(static_cast<size_t>(n));
    if (is_narrow(from)) {
      const auto *px = static_cast<const uint8_t *>(x.raw_data());
      for (int64_t i = 0; i < n; ++i) values[i] = narrow::load(from, px[i]);
    } else {
      const bool ok = bin::visit_dtype(from, [&](auto tag) {
        using From = decltype(tag);
        const From *px = x.data<From>();
        for (int64_t i = 0; i < n; ++i) values[i] = narrow::scalar_of(bin::load(px[i]));
      });
      if (!ok) ctx.fail("cannot cast ", dtype_name(from), " to ", dtype_name(to));
    }
    if (is_narrow(to)) {
      auto *py = static_cast<uint8_t *>(y.raw_data());
      for (int64_t i = 0; i < n; ++i) py[i] = narrow::store(to, values[i], saturate, round_mode);
      return;
    }
    const bool ok = bin::visit_dtype(to, [&](auto tag) {
      using To = decltype(tag);
      To *py = y.data<To>();
      for (int64_t i = 0; i < n; ++i)
        py[i] = values[i].integral ? bin::convert<To>(values[i].i) : bin::convert<To>(values[i].d);
    });
    if (!ok) ctx.fail("cannot cast ", dtype_name(from), " to ", dtype_name(to));
    return;
  }

  bool done = false;
  bin::visit_dtype(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    bin::visit_dtype(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From *px = x.data<From>();
      To *py = y.data<To>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<From, To>)
          py[i] = px[i];
        else
          py[i] = bin::convert<To>(bin::load(px[i]));
      }
      done = true;
    });
  });
  if (!done) ctx.fail("cannot cast ", dtype_name(from), " to ", dtype_name(to));
}

LUMEN_REGISTER_KERNEL("reference", "cast", cast, LUMEN_NUMERIC_DTYPES, DType::Bool,
                      DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                      DType::Float8E5M2FNUZ, DType::UInt4, DType::Int4, DType::Float4E2M1,
                      DType::Float8E8M0, DType::UInt2, DType::Int2);

}  // namespace
}  // namespace lumen
