// CPU cast between the standard dtypes (floats, integers, bool): one typed loop per dtype pair,
// shared out over the thread pool. The conversion rules are the ones every backend shares
// (bin::convert: float -> int truncates and saturates, NaN -> 0, anything -> bool is != 0), so
// results equal the reference's; float16 <-> float32 (a half-precision model's edges) by F16C;
// the narrow types (float8, float4, int4, int2) through the shared narrow_types.h.
#include <cstring>
#include <string>
#include <type_traits>

#include "backends/common/binary_functors.h"
#include "backends/common/narrow_types.h"
#include "backends/cpu/ukernels/f32_half.h"
#include "core/kernel.h"

namespace lumen {
namespace ukernels {
// The F16C kernels exist on x86-64 only (ukernels/f32_half__avx2.cc); elsewhere these stand in.
#if !(defined(__x86_64__) && defined(__GNUC__))
void f16_to_f32__avx2(const uint16_t *, float *, int64_t) {}
void f32_to_f16__avx2(const float *, uint16_t *, int64_t) {}
#endif
}  // namespace ukernels
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per parallel chunk

// A narrow type on either side (float8, float4, int4, int2; one byte per element): each element
// through a narrow::Scalar, with the `saturate` (float8 targets) and `round_mode` (float8e8m0)
// attributes, the conversions every backend shares (backends/common/narrow_types.h).
void cast_narrow(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const DType from = x.dtype(), to = y.dtype();
  const bool saturate = ctx.attrs.get_int("saturate", 1) != 0;
  const std::string mode = ctx.attrs.get_string("round_mode", "up");
  const int round_mode = narrow::round_mode(mode);
  if (round_mode < 0) ctx.fail("round_mode must be 'up', 'down' or 'nearest', got '", mode, "'");
  // Stores the elements [begin, end) given each one's Scalar.
  const auto store = [&](auto &&value_at) {
    if (is_narrow(to)) {
      auto *py = static_cast<uint8_t *>(y.raw_data());
      ctx.pool.parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          py[i] = narrow::store(to, value_at(i), saturate, round_mode);
      });
      return true;
    }
    return bin::visit_dtype(to, [&](auto tag) {
      using To = decltype(tag);
      To *py = y.data<To>();
      ctx.pool.parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const narrow::Scalar v = value_at(i);
          py[i] = v.integral ? bin::convert<To>(v.i) : bin::convert<To>(v.d);
        }
      });
    });
  };
  bool ok = false;
  if (is_narrow(from)) {
    const auto *px = static_cast<const uint8_t *>(x.raw_data());
    ok = store([&](int64_t i) { return narrow::load(from, px[i]); });
  } else {
    bin::visit_dtype(from, [&](auto tag) {
      const auto *px = x.data<decltype(tag)>();
      ok = store([&](int64_t i) { return narrow::scalar_of(bin::load(px[i])); });
    });
  }
  if (!ok) ctx.fail("cannot cast ", dtype_name(from), " to ", dtype_name(to));
}

void cast(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const DType from = x.dtype(), to = y.dtype();
  if (from == to) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  if (is_narrow(from) || is_narrow(to)) return cast_narrow(ctx);
  // float16 <-> float32 (the edges of a half-precision model run in float32) by F16C.
  if (ukernels::f16c_runs() && ((from == DType::Float16 && to == DType::Float32) ||
                                (from == DType::Float32 && to == DType::Float16))) {
    ctx.pool.parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
      if (from == DType::Float16)
        ukernels::f16_to_f32__avx2(static_cast<const uint16_t *>(x.raw_data()) + begin,
                                   y.data<float>() + begin, end - begin);
      else
        ukernels::f32_to_f16__avx2(x.data<float>() + begin,
                                   static_cast<uint16_t *>(y.raw_data()) + begin, end - begin);
    });
    return;
  }
  bool done = false;
  bin::visit_dtype(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    bin::visit_dtype(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From *px = x.data<From>();
      To *py = y.data<To>();
      ctx.pool.parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          if constexpr (std::is_same_v<From, To>)
            py[i] = px[i];
          else
            py[i] = bin::convert<To>(bin::load(px[i]));
        }
      });
      done = true;
    });
  });
  if (!done) ctx.fail("cannot cast ", dtype_name(from), " to ", dtype_name(to));
}

LUMEN_REGISTER_KERNEL("cpu", "cast", cast, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                      DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64, DType::Bool,
                      DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                      DType::Float8E5M2FNUZ, DType::UInt4, DType::Int4, DType::Float4E2M1,
                      DType::Float8E8M0, DType::UInt2, DType::Int2);

}  // namespace
}  // namespace lumen
