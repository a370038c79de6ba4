// Data movement on CUDA: reshape-like ops (when the plan could not make them views) as one
// device-to-device copy; transpose, expand, concat and slice as strided copies; gather.
#include <algorithm>
#include <cstring>

#include "backends/common/axis_layout.h"
#include "backends/common/device_kernel_params.h"
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

// Slice as one strided copy; its starts, axes and steps are read on the host (slice_layout).
void slice(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const SliceLayout slice = slice_layout(ctx, x);
  if (y.numel() == 0) return;
  const auto *from = static_cast<const std::byte *>(x.raw_data()) +
                     slice.offset * static_cast<int64_t>(dtype_size(x.dtype()));
  check_launch(
      ctx, launch_strided_copy(static_cast<int>(dtype_size(x.dtype())), from, y.raw_data(),
                               make_walk(ctx, y.shape(), slice.read, contiguous_strides(y.shape())),
                               stream_of(ctx)));
}

// Indices are checked on the host first (checked_gather_axis): a kernel cannot report a bad one.
void gather(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const size_t axis = checked_gather_axis(ctx);
  const int64_t n = data.shape()[axis];
  const AxisSplit at = split_at(data.shape(), axis);
  check_launch(ctx, launch_gather(static_cast<int>(dtype_size(data.dtype())), data.raw_data(),
                                  idx.raw_data(), idx.dtype() == DType::Int64, y.raw_data(),
                                  at.outer, n, idx.numel(), at.inner, stream_of(ctx)));
}

// Every element the one-element attribute `value` (default float32 0); the shape input is only
// read by inference.
void constant_of_shape(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const size_t size = dtype_size(y.dtype());
  uint64_t bits = 0;
  if (const Tensor *v = ctx.attrs.get_tensor("value")) {
    if (v->dtype() != y.dtype() || v->numel() != 1)
      ctx.fail("value must hold one ", dtype_name(y.dtype()));
    std::memcpy(&bits, v->contiguous().raw_data(), size);
  }
  check_launch(ctx,
               launch_fill(y.raw_data(), y.numel(), static_cast<int>(size), bits, stream_of(ctx)));
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
// Keyed by the shape input's dtype; the value may be any dtype of 1 to 8 bytes.
LUMEN_REGISTER_KERNEL("cuda", "constant_of_shape", constant_of_shape, DType::Int64, DType::Int32);

}  // namespace lumen::cuda
