// CPU cast between the standard dtypes (floats, integers, bool): one typed loop per dtype pair,
// shared out over the thread pool. The conversion rules are the ones every backend shares
// (bin::convert: float -> int truncates and saturates, NaN -> 0, anything -> bool is != 0), so
// results equal the reference's; float16 <-> float32 (a half-precision model's edges) by F16C.
// Narrow types (float8, int4...) are the reference's.
#include <cstring>

#include "backends/common/binary_functors.h"
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

void cast(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const DType from = x.dtype(), to = y.dtype();
  if (from == to) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
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
  // Narrow targets (float8, int4...): kernels are keyed by the input's dtype only, so this kernel
  // is chosen for them too; until placement can ask for the (from, to) pair, they take the
  // reference's conversion.
  if (!done) run_reference_kernel(ctx);
}

LUMEN_REGISTER_KERNEL("cpu", "cast", cast, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                      DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64, DType::Bool);

}  // namespace
}  // namespace lumen
