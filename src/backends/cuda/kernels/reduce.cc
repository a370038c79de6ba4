// Reductions on CUDA over any set of axes (reduce.cu: a block per output element), float32. Axes
// come from the attribute or from input 1, read on the host (KernelContext::host_input).
#include "graph/ops/reduce.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

template <int Kind>
void reduce(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const std::vector<int64_t> axes =
      ctx.has_input(1) ? ctx.host_input_ints(1, "axes") : ctx.attrs.get_ints("axes", {});
  std::vector<bool> mask;
  try {
    mask = reduce_detail::reduce_mask(axes, x.rank(),
                                      ctx.attrs.get_int("noop_with_empty_axes", 0) != 0);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  std::vector<int64_t> kept, kept_strides, reduced, reduced_strides;
  for (size_t d = 0; d < x.rank(); ++d) {
    (mask[d] ? reduced : kept).push_back(x.shape()[d]);
    (mask[d] ? reduced_strides : kept_strides).push_back(strides[d]);
  }
  if (y.numel() == 0) return;
  const Walk k = make_walk(ctx, Shape(kept), kept_strides, kept_strides);
  const Walk r = make_walk(ctx, Shape(reduced), reduced_strides, reduced_strides);
  check_launch(ctx, launch_reduce(Kind, device_data(x), device_data(y), k, r, stream_of(ctx)));
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
