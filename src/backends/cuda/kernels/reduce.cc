// Reductions on CUDA over any set of axes (reduce.cu: a block per output element), float32. Axes
// come from the attribute or from input 1, read on the host (KernelContext::host_input).
#include "backends/common/device_kernel_params.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

template <int Kind>
void reduce(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const ReduceLayout r = reduce_layout(ctx, x);
  if (y.numel() == 0) return;
  const Walk kept = make_walk(ctx, Shape(r.kept), r.kept_strides, r.kept_strides);
  const Walk reduced = make_walk(ctx, Shape(r.reduced), r.reduced_strides, r.reduced_strides);
  check_launch(ctx,
               launch_reduce(Kind, device_data(x), device_data(y), kept, reduced, stream_of(ctx)));
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "reduce_sum", reduce<kReduceSum>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_mean", reduce<kReduceMean>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_max", reduce<kReduceMax>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_min", reduce<kReduceMin>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_prod", reduce<kReduceProd>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_l1", reduce<kReduceL1>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_l2", reduce<kReduceL2>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_log_sum", reduce<kReduceLogSum>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_log_sum_exp", reduce<kReduceLogSumExp>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "reduce_sum_square", reduce<kReduceSumSquare>, DType::Float32);

}  // namespace lumen::cuda
