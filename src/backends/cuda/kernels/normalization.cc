// Softmax and log-softmax along any axis, layer and RMS normalization (a block per row, rows.cu)
// and local response normalization, on CUDA (float32).
#include "backends/common/axis_layout.h"
#include "backends/common/device_kernel_params.h"
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

// layer_norm (x, scale, bias; outputs y, mean, inv_std) and rms_norm (x, scale): over the axis
// and every dim after it, scale and bias holding one value per position or a single one.
template <bool Rms>
void normalize(KernelContext &ctx) {
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
  const Tensor *bias = !Rms && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const auto optional_output = [&](size_t i) {
    return i < ctx.outputs.size() && ctx.outputs[i] ? device_data(*ctx.outputs[i]) : nullptr;
  };
  check_launch(ctx, launch_layer_norm(device_data(x), device_data(scale), stride_of(scale, "scale"),
                                      bias ? device_data(*bias) : nullptr,
                                      bias ? stride_of(*bias, "bias") : 0, device_data(y),
                                      optional_output(1), optional_output(2), x.numel() / len, len,
                                      static_cast<float>(ctx.attrs.get_float("epsilon", 1e-5)), Rms,
                                      stream_of(ctx)));
}

void lrn(KernelContext &ctx) {
  const LrnWindow w = lrn_window(ctx);
  check_launch(
      ctx, launch_lrn(device_data(ctx.input(0)), device_data(ctx.output(0)), w.batch, w.channels,
                      w.plane, w.size, w.alpha, w.beta, w.bias, stream_of(ctx)));
}

// Parameters other than one value per normalized position, or a single value, stay on the CPU
// (where they are known at compile time; the kernel checks again).
std::string per_position_parameters(const NodeQuery &node) {
  const Shape &x = node.inputs[0].shape;
  const int64_t axis = node.attributes().get_int("axis", -1);
  const int64_t first = axis < 0 ? axis + static_cast<int64_t>(x.rank()) : axis;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (!node.inputs[i].present) continue;
    const Shape &p = node.inputs[i].shape;
    if (p.rank() > x.rank()) return str("a parameter of rank ", p.rank(), " over ", x.to_string());
    bool single = true,
         per_position = static_cast<int64_t>(p.rank()) <= static_cast<int64_t>(x.rank()) - first;
    for (size_t d = 0; d < p.rank(); ++d) {
      const int64_t pd = p[d], xd = x[x.rank() - p.rank() + d];
      single = single && pd == 1;
      per_position = per_position && (pd == xd || pd == kUnknownDim || xd == kUnknownDim);
    }
    if (!single && !per_position)
      return str("a parameter of shape ", p.to_string(), " broadcast over ", x.to_string());
  }
  return "";
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "softmax", softmax, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "log_softmax", log_softmax, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "layer_norm", normalize<false>, DType::Float32);
LUMEN_REGISTER_SUPPORTS("cuda", "layer_norm", per_position_parameters, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "rms_norm", normalize<true>, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "lrn", lrn, DType::Float32);
LUMEN_REGISTER_SUPPORTS("cuda", "rms_norm", per_position_parameters, DType::Float32);

}  // namespace lumen::cuda
