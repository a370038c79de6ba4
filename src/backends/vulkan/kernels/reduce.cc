// Reductions on Vulkan over any set of axes (reduce.comp: a workgroup per output element), float32.
// Axes come from the attribute or from input 1, read on the host (KernelContext::host_input).
#include "backends/common/device_kernel_params.h"
#include "backends/vulkan/kernels/strided.h"
#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

enum Kind : uint32_t { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Dims and strides collapsed to one region of at most 6 dims.
Region region_of(const KernelContext &ctx, const std::vector<int64_t> &dims,
                 const std::vector<int64_t> &strides) {
  const std::vector<RegionPiece> pieces = collapse(ctx, Shape(dims), strides, strides);
  if (pieces.size() != 1) ctx.fail("more than ", kMaxDims, " dims that do not merge");
  return pieces[0].region;
}

template <uint32_t K>
void reduce(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const ReduceLayout layout = reduce_layout(ctx, x);
  if (y.numel() == 0) return;
  int64_t count = 1;
  for (int64_t d : layout.reduced) count *= d;
  const Region k = region_of(ctx, layout.kept, layout.kept_strides);
  const Region r = count ? region_of(ctx, layout.reduced, layout.reduced_strides) : Region{};
  struct Push {
    uint32_t n_out, count, kind, x_off, y_off, kept_rank, reduced_rank;
    uint32_t kept_shape[kMaxDims], kept_stride[kMaxDims], reduced_shape[kMaxDims],
        reduced_stride[kMaxDims];
  } push{};
  push.n_out = u32(ctx, y.numel());
  push.count = u32(ctx, count);
  push.kind = K;
  push.x_off = element_offset(x);
  push.y_off = element_offset(y);
  push.kept_rank = k.rank;
  push.reduced_rank = r.rank;
  for (uint32_t d = 0; d < k.rank; ++d)
    push.kept_shape[d] = k.shape[d], push.kept_stride[d] = k.stride[0][d];
  for (uint32_t d = 0; d < r.rank; ++d)
    push.reduced_shape[d] = r.shape[d], push.reduced_stride[d] = r.stride[0][d];
  const Groups g = row_groups(push.n_out);
  dispatch(ctx, reduction_shader(shaders::reduce, shaders::reduce_subgroup), {&x, &y}, push, g.x,
           g.y);
}

}  // namespace

LUMEN_REGISTER_KERNEL("vulkan", "reduce_sum", reduce<kSum>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_mean", reduce<kMean>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_max", reduce<kMax>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_min", reduce<kMin>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_prod", reduce<kProd>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_l1", reduce<kL1>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_l2", reduce<kL2>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_log_sum", reduce<kLogSum>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_log_sum_exp", reduce<kLogSumExp>, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "reduce_sum_square", reduce<kSumSquare>, DType::Float32);

}  // namespace lumen::vulkan
