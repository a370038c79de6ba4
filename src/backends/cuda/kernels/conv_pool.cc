// 2-D convolution and fused_conv (epilogue: bias, residual, activation) on CUDA as im2col +
// cuBLASLt GEMM per group (a 1x1 convolution with stride 1 and no padding reads the input as
// its own columns), or directly for depthwise and other narrow groups; any kernel size, stride,
// dilation, padding and group count; and 2-D pooling
// (max, average, and the global forms as one window over the whole plane), float32 NCHW.
#include <algorithm>

#include "backends/common/activation_code.h"
#include "backends/common/device_kernel_params.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/gemm.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

// The im2col columns of a chunk of images stay under this many bytes.
constexpr int64_t kColumnBytes = int64_t{256} << 20;

void conv2d(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (x.rank() != 4 || w.rank() != 4) ctx.fail("expects 4-D input and weight");
  const auto strides = fixed_ints(ctx, "strides", {1, 1}),
             pads = fixed_ints(ctx, "pads", {0, 0, 0, 0}),
             dilations = fixed_ints(ctx, "dilations", {1, 1});
  ConvGeometry g;
  const int64_t N = x.shape()[0], M = w.shape()[0];
  g.C = x.shape()[1], g.H = x.shape()[2], g.W = x.shape()[3];
  g.KH = w.shape()[2], g.KW = w.shape()[3], g.OH = y.shape()[2], g.OW = y.shape()[3];
  g.sh = strides[0], g.sw = strides[1], g.dh = dilations[0], g.dw = dilations[1];
  g.ph = pads[0], g.pw = pads[1], g.groups = ctx.attrs.get_int("group", 1);
  if (g.groups <= 0 || g.C % g.groups || M % g.groups || w.shape()[1] * g.groups != g.C)
    ctx.fail("weight ", w.shape().to_string(), " does not fit ", g.C, " channels in ", g.groups,
             " groups");
  const Tensor *bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor *residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (residual && residual->shape() != y.shape())
    ctx.fail("residual ", residual->shape().to_string(), " must have the output's shape ",
             y.shape().to_string());
  if (y.numel() == 0) return;
  const int64_t cg = g.C / g.groups, mg = M / g.groups, plane = g.OH * g.OW;
  const int64_t rows = cg * g.KH * g.KW;  // the GEMM's K
  const bool direct = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
                      pads[2] == 0 && pads[3] == 0;
  const Activation act = epilogue_activation(ctx.attrs);
  const cudaStream_t stream = stream_of(ctx);
  const auto epilogue = [&](bool relu_done) {
    if (bias || residual || (act.code != kNoActivation && !relu_done))
      check_launch(
          ctx, launch_channel_epilogue(device_data(y), bias ? device_data(*bias) : nullptr,
                                       residual ? device_data(*residual) : nullptr, y.numel(), M,
                                       plane, act.code, act.alpha, act.beta, stream));
  };
  // Depthwise and other narrow groups: one direct pass (a GEMM per group would be mostly launch
  // overhead and padding).
  if (mg < 16 || rows < 16) {
    check_launch(
        ctx, launch_conv_direct(device_data(x), device_data(w), device_data(y), g, N, M, stream));
    return epilogue(false);
  }
  Product p;
  p.M = mg, p.N = plane, p.K = rows;
  p.c_stride = M * plane;  // image to image in y
  // ReLU with nothing to add after the GEMM goes into cuBLASLt's epilogue.
  p.relu = act.code == kRelu && !bias && !residual;
  const int64_t per_image = rows * plane * static_cast<int64_t>(sizeof(float));
  const int64_t chunk = direct ? N : std::clamp<int64_t>(kColumnBytes / per_image, 1, N);
  std::shared_ptr<Buffer> columns;
  if (!direct) columns = device_allocator().allocate(static_cast<size_t>(chunk * per_image));
  for (int64_t first = 0; first < N; first += chunk) {
    const int64_t images = std::min(chunk, N - first);
    for (int64_t group = 0; group < g.groups; ++group) {
      p.a = device_data(w) + group * mg * rows;
      p.batch = images;
      p.c = device_data(y) + (first * M + group * mg) * plane;
      if (direct) {
        p.b = device_data(x) + (first * g.C + group * cg) * plane;
        p.b_stride = g.C * plane;
      } else {
        float *col = static_cast<float *>(columns->data());
        check_launch(ctx, launch_im2col(device_data(x), col, g, first, images, group, stream));
        p.b = col;
        p.b_stride = rows * plane;
      }
      run_product(ctx, p);
    }
  }
  if (columns) {
    if (CudaStream *own = cuda_stream(ctx.stream))
      own->retain(std::move(columns));
    else
      LUMEN_CUDA(cudaStreamSynchronize(stream));  // nothing else keeps the columns alive
  }
  epilogue(p.relu);
}

template <int Mode, bool Global>
void pool(KernelContext &ctx) {
  check_launch(ctx, launch_pool2d(device_data(ctx.input(0)), device_data(ctx.output(0)),
                                  pool_window(ctx, Global), Mode, stream_of(ctx)));
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "conv2d", conv2d, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "fused_conv", conv2d, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "max_pool2d", (pool<0, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "avg_pool2d", (pool<1, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "global_max_pool", (pool<0, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "global_avg_pool", (pool<1, true>), DType::Float32);

}  // namespace lumen::cuda
