// Normalizations on Vulkan, float32: layer normalization over the trailing dims from `axis`
// (layer_norm.comp: a workgroup per row) and local response normalization across channels
// (lrn.comp).
#include "backends/common/axis_layout.h"
#include "backends/common/device_kernel_params.h"
#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

void layer_norm(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &scale = ctx.input(1);
  Tensor &y = ctx.output(0);
  const Shape &s = x.shape();
  const AxisSplit at = split_at(s, s.normalize_axis(ctx.attrs.get_int("axis", -1)));
  const int64_t len = at.len * at.inner;  // normalized over the axis and every dim after it
  const auto stride_of = [&](const Tensor &t, const char *what) -> uint32_t {
    if (t.numel() == len) return 1;
    if (t.numel() == 1) return 0;
    ctx.fail(what, " must have the normalized shape's ", len, " elements or one; got ",
             t.shape().to_string());
  };
  struct Push {
    uint32_t rows, len, x_off, scale_off, bias_off, y_off, mean_off, inv_off, flags;
    uint32_t scale_stride, bias_stride;
    float epsilon;
  } push{};
  if (x.numel() == 0) return;
  push.rows = u32(ctx, x.numel() / len);
  push.len = u32(ctx, len);
  push.x_off = element_offset(x);
  push.scale_off = element_offset(scale);
  push.scale_stride = stride_of(scale, "scale");
  push.y_off = element_offset(y);
  push.epsilon = static_cast<float>(ctx.attrs.get_float("epsilon", 1e-5));
  const Tensor *bias = &x, *mean = &y, *inv = &y;
  if (ctx.has_input(2)) {
    bias = &ctx.input(2);
    push.bias_off = element_offset(*bias);
    push.bias_stride = stride_of(*bias, "bias");
    push.flags |= 1;
  }
  const bool stats = ctx.outputs.size() > 2 && ctx.outputs[1] && ctx.outputs[2];
  if (!stats && ctx.outputs.size() > 1 &&
      (ctx.outputs[1] || (ctx.outputs.size() > 2 && ctx.outputs[2])))
    ctx.fail("the Vulkan kernel makes the mean and inverse std only together");
  if (stats) {
    mean = ctx.outputs[1];
    inv = ctx.outputs[2];
    push.mean_off = element_offset(*mean);
    push.inv_off = element_offset(*inv);
    push.flags |= 2;
  }
  const Groups g = row_groups(push.rows);
  dispatch(ctx, reduction_shader(shaders::layer_norm, shaders::layer_norm_subgroup),
           {&x, &scale, bias, &y, mean, inv}, push, g.x, g.y);
}

void lrn(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const LrnWindow w = lrn_window(ctx);
  struct Push {
    uint32_t n, C, plane, size, x_off, y_off;
    float alpha, beta, bias;
  } push{u32(ctx, x.numel()),
         u32(ctx, w.channels),
         u32(ctx, w.plane),
         u32(ctx, w.size),
         element_offset(x),
         element_offset(y),
         w.alpha,
         w.beta,
         w.bias};
  const Groups g = groups_for(push.n);
  if (push.n) dispatch(ctx, shaders::lrn, {&x, &y}, push, g.x, g.y);
}

}  // namespace

LUMEN_REGISTER_KERNEL("vulkan", "layer_norm", layer_norm, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "lrn", lrn, DType::Float32);

}  // namespace lumen::vulkan
