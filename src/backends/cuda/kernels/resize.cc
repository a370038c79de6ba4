// resize on CUDA (ONNX Resize, every mode, coordinate transformation and antialias): one pass
// per resized axis with that axis's taps (backends/common/resize_taps.h, the ones every backend
// uses) uploaded as a table, float32. The roi, scales and sizes are read from their host copies.
#include "backends/common/resize_taps.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"
#include "core/backend.h"

namespace lumen::cuda {
namespace {

void resize(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const ResizeOptions options = ResizeOptions::from(ctx.attrs);
  const std::vector<ResizePass> passes = device_resize_passes(ctx, options);
  const cudaStream_t stream = stream_of(ctx);
  if (passes.empty()) {
    if (y.nbytes())
      LUMEN_CUDA(cudaMemcpyAsync(y.raw_data(), x.raw_data(), y.nbytes(), cudaMemcpyDeviceToDevice,
                                 stream));
    return;
  }
  Backend &cuda = get_backend("cuda");
  CudaStream *own = cuda_stream(ctx.stream);
  std::vector<int64_t> dims = x.shape().dims();
  Tensor from = x;
  for (size_t p = 0; p < passes.size(); ++p) {
    const auto &[a, taps] = passes[p];
    const int64_t in_w = dims[a], out_w = y.shape()[a];
    if (out_w > 0 && in_w == 0) ctx.fail("cannot resize an empty axis ", a, " to ", out_w);
    dims[a] = out_w;
    const bool last = p + 1 == passes.size();
    Tensor to = last ? y : Tensor::empty(Shape(dims), DType::Float32, &device_allocator());
    if (to.numel() == 0) return;  // an empty output: nothing to compute, here or after
    Tensor table =
        Tensor::empty(Shape{out_w * (2 * taps.taps + 1)}, DType::Int32, &device_allocator());
    cuda.copy(table, taps_table(taps, out_w), ctx.stream);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= dims[d];
    for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
    check_launch(ctx, launch_resize_axis(device_data(from), device_data<int32_t>(table),
                                         device_data(to), outer, in_w, out_w, inner, taps.taps,
                                         static_cast<float>(options.extrapolation), stream));
    // Kept until the work reading them has run.
    if (own) {
      own->retain(table.buffer());
      if (!last) own->retain(to.buffer());
    } else {
      LUMEN_CUDA(cudaStreamSynchronize(stream));
    }
    from = std::move(to);
  }
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "resize", resize, DType::Float32);

}  // namespace lumen::cuda
