// Data movement on CUDA: reshape-like ops (when the plan could not make them views) as one
// device-to-device copy; transpose, expand, concat and slice as strided copies; gather.
#include <algorithm>

#include "backends/common/axis_layout.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

void copy_whole(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (x.raw_data() == y.raw_data() || x.nbytes() == 0) return;  // the plan made it a view
  LUMEN_CUDA(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice,
                             stream_of(ctx)));
}

void strided_copy(KernelContext &ctx, const Tensor &x, void *y, const Shape &shape,
                  const std::vector<int64_t> &read, const std::vector<int64_t> &write) {
  check_launch(ctx, launch_strided_copy(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), y,
                                        make_walk(ctx, shape, read, write), stream_of(ctx)));
}

void transpose(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  strided_copy(ctx, x, y.raw_data(), y.shape(), transpose_read_strides(x.shape(), ctx.attrs),
               contiguous_strides(y.shape()));
}

void expand(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  strided_copy(ctx, x, y.raw_data(), y.shape(), broadcast_strides(x.shape(), y.shape()),
               contiguous_strides(y.shape()));
}

void concat(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const size_t axis = y.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const std::vector<int64_t> out = contiguous_strides(y.shape());
  const int64_t element = static_cast<int64_t>(dtype_size(y.dtype()));
  int64_t at = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor &x = ctx.input(i);
    std::byte *to = static_cast<std::byte *>(y.raw_data()) + at * out[axis] * element;
    if (x.raw_data() != to)  // the plan may have placed the input there already
      strided_copy(ctx, x, to, x.shape(), contiguous_strides(x.shape()), out);
    at += x.shape()[axis];
  }
}

// Slice's starts, axes and steps are read on the host (KernelContext::host_input_ints): the copy
// of each the graph holds in host memory. A strided copy from the first element taken, with
// negative strides for negative steps.
void slice(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const std::vector<int64_t> starts = ctx.host_input_ints(1, "starts");
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (ctx.has_input(3)) {
    axes = ctx.host_input_ints(3, "axes");
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ctx.has_input(4)) steps = ctx.host_input_ints(4, "steps");
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, axes and steps must have the same length");
  const std::vector<int64_t> in = contiguous_strides(x.shape());
  std::vector<int64_t> read = in;
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t axis = x.shape().normalize_axis(axes[i]);
    const int64_t dim = x.shape()[axis], step = steps[i];
    int64_t start = starts[i];
    if (start < 0) start += dim;
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    offset += start * in[axis];
    read[axis] = in[axis] * step;
  }
  if (y.numel() == 0) return;
  const auto *from = static_cast<const std::byte *>(x.raw_data()) +
                     offset * static_cast<int64_t>(dtype_size(x.dtype()));
  check_launch(ctx,
               launch_strided_copy(static_cast<int>(dtype_size(x.dtype())), from, y.raw_data(),
                                   make_walk(ctx, y.shape(), read, contiguous_strides(y.shape())),
                                   stream_of(ctx)));
}

// Indices are checked on the host, from the host copy of input 1 (model inputs, constants): a
// kernel cannot report a bad one, and an index made on the device could not be checked.
void gather(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const size_t axis = data.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const int64_t n = data.shape()[axis];
  if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32)
    ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype()));
  for (const int64_t v : ctx.host_input_ints(1, "indices"))
    if (v < -n || v >= n) ctx.fail("index ", v, " is out of range for dim ", axis, " of size ", n);
  const AxisSplit at = split_at(data.shape(), axis);
  check_launch(ctx, launch_gather(static_cast<int>(dtype_size(data.dtype())), data.raw_data(),
                                  idx.raw_data(), idx.dtype() == DType::Int64, y.raw_data(),
                                  at.outer, n, idx.numel(), at.inner, stream_of(ctx)));
}

}  // namespace

// The dtypes the GPU op cases cover (tests/ops/gpu_op_cases.h); the copies move any element size.
#define LUMEN_CUDA_MOVEMENT(op, fn) \
  LUMEN_REGISTER_KERNEL("cuda", op, fn, DType::Float32, DType::Int32, DType::Int64)
LUMEN_CUDA_MOVEMENT("reshape", copy_whole);
LUMEN_CUDA_MOVEMENT("flatten", copy_whole);
LUMEN_CUDA_MOVEMENT("squeeze", copy_whole);
LUMEN_CUDA_MOVEMENT("unsqueeze", copy_whole);
LUMEN_CUDA_MOVEMENT("transpose", transpose);
LUMEN_CUDA_MOVEMENT("expand", expand);
LUMEN_CUDA_MOVEMENT("concat", concat);
LUMEN_CUDA_MOVEMENT("slice", slice);
LUMEN_CUDA_MOVEMENT("gather", gather);

}  // namespace lumen::cuda
