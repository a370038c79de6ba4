// CPU cast between the standard dtypes (floats, integers, bool): one typed loop per dtype pair,
// shared out over the thread pool. The conversion rules are the ones every backend shares
// (bin::convert: float -> int truncates and saturates, NaN -> 0, anything -> bool is != 0), so
// results equal the reference's. Narrow types (float8, int4...) are the reference's.
#include <cstring>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen {
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
