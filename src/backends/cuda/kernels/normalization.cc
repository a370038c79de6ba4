// Softmax and log-softmax along any axis, and layer normalization, on CUDA (float32): a block
// per row (rows.cu).
#include "backends/common/axis_layout.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

void run_softmax(KernelContext &ctx, bool log) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const Shape &s = x.shape();
  if (x.numel() == 0) return;
  const AxisSplit at = split_at(s, s.normalize_axis(ctx.attrs.get_int("axis", -1)));
  check_launch(ctx, launch_softmax(device_data(x), device_data(y), at.outer * at.inner, at.len,
                                   at.inner, log, stream_of(ctx)));
}
void softmax(KernelContext &ctx) {
  run_softmax(ctx, false);
}
void log_softmax(KernelContext &ctx) {
  run_softmax(ctx, true);
}

void layer_norm(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &scale = ctx.input(1);
  Tensor &y = ctx.output(0);
  const Shape &s = x.shape();
  if (x.numel() == 0) return;
  const AxisSplit at = split_at(s, s.normalize_axis(ctx.attrs.get_int("axis", -1)));
  const int64_t len = at.len * at.inner;  // normalized over the axis and every dim after it
  const auto stride_of = [&](const Tensor &t, const char *what) -> int64_t {
    if (t.numel() == len) return 1;
    if (t.numel() == 1) return 0;
    ctx.fail(what, " must have the normalized shape's ", len, " elements or one; got ",
             t.shape().to_string());
  };
  const Tensor *bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const auto optional_output = [&](size_t i) {
    return i < ctx.outputs.size() && ctx.outputs[i] ? device_data(*ctx.outputs[i]) : nullptr;
  };
  check_launch(ctx, launch_layer_norm(device_data(x), device_data(scale), stride_of(scale, "scale"),
                                      bias ? device_data(*bias) : nullptr,
                                      bias ? stride_of(*bias, "bias") : 0, device_data(y),
                                      optional_output(1), optional_output(2), x.numel() / len, len,
                                      static_cast<float>(ctx.attrs.get_float("epsilon", 1e-5)),
                                      stream_of(ctx)));
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "softmax", softmax, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "log_softmax", log_softmax, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "layer_norm", layer_norm, DType::Float32);

}  // namespace lumen::cuda
