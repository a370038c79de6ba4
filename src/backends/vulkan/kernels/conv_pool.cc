// 2-D convolution and fused_conv (its epilogue: bias, residual, activation) (conv2d_gemm.comp: an
// implicit GEMM per group, where the groups are wide; conv2d.comp: direct, one invocation per
// output element, for depthwise and other narrow groups; both any kernel size, stride, dilation,
// padding and group count) and 2-D pooling (pool2d.comp: max, average, and the global forms as one
// window over the whole plane), float32 NCHW.
#include <limits>

#include "backends/common/activation_code.h"
#include "backends/common/device_kernel_params.h"
#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

void conv2d(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (x.rank() != 4 || w.rank() != 4) ctx.fail("expects 4-D input and weight");
  const auto strides = fixed_ints(ctx, "strides", {1, 1}),
             pads = fixed_ints(ctx, "pads", {0, 0, 0, 0}),
             dilations = fixed_ints(ctx, "dilations", {1, 1});
  struct Push {
    uint32_t N, C, H, W, M, OH, OW, KH, KW;
    uint32_t sh, sw, dh, dw, ph, pw, group;
    uint32_t x_off, w_off, b_off, y_off, flags, act;
    float act_alpha, act_beta;
    uint32_t z_off;
  } p{};
  p.N = u32(ctx, x.shape()[0]), p.C = u32(ctx, x.shape()[1]);
  p.H = u32(ctx, x.shape()[2]), p.W = u32(ctx, x.shape()[3]);
  p.M = u32(ctx, w.shape()[0]), p.KH = u32(ctx, w.shape()[2]), p.KW = u32(ctx, w.shape()[3]);
  p.OH = u32(ctx, y.shape()[2]), p.OW = u32(ctx, y.shape()[3]);
  p.sh = u32(ctx, strides[0]), p.sw = u32(ctx, strides[1]);
  p.dh = u32(ctx, dilations[0]), p.dw = u32(ctx, dilations[1]);
  p.ph = u32(ctx, pads[0]), p.pw = u32(ctx, pads[1]);
  p.group = u32(ctx, ctx.attrs.get_int("group", 1));
  if (p.group == 0 || p.C % p.group || p.M % p.group || w.shape()[1] * p.group != p.C)
    ctx.fail("weight ", w.shape().to_string(), " does not fit ", p.C, " channels in ", p.group,
             " groups");
  p.x_off = element_offset(x), p.w_off = element_offset(w), p.y_off = element_offset(y);
  const Tensor *bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (bias) p.b_off = element_offset(*bias), p.flags |= 1;
  const Tensor *residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (residual) {
    if (residual->shape() != y.shape())
      ctx.fail("residual ", residual->shape().to_string(), " must have the output's shape ",
               y.shape().to_string());
    p.z_off = element_offset(*residual), p.flags |= 2;
  }
  const Activation act = epilogue_activation(ctx.attrs);
  p.act = act.code, p.act_alpha = act.alpha, p.act_beta = act.beta;
  if (y.numel() == 0) return;
  const std::vector<const Tensor *> bound{&x, &w, bias ? bias : &w, &y, residual ? residual : &w};
  // An implicit GEMM where the group's GEMM fills its 64x64 tiles; the direct loop where it would
  // mostly compute padding (depthwise and other narrow groups, tiny reductions).
  const int64_t group_channels = p.M / p.group, reduction = (p.C / p.group) * p.KH * p.KW;
  if (group_channels >= 16 && reduction >= 16) {
    const int64_t pixels = int64_t{p.N} * p.OH * p.OW;
    dispatch(ctx, shaders::conv2d_gemm, bound, p, u32(ctx, (pixels + 63) / 64),
             u32(ctx, (group_channels + 63) / 64), p.group);
    return;
  }
  const Groups g = groups_for(static_cast<uint64_t>(y.numel()));
  dispatch(ctx, shaders::conv2d, bound, p, g.x, g.y);
}

struct PoolPush {
  uint32_t planes, H, W, OH, OW, KH, KW, sh, sw, ph, pw, ph_end, pw_end, dh, dw, mode,
      count_include_pad;
  uint32_t x_off, y_off;
};

template <uint32_t Mode, bool Global>
void pool(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const PoolWindow w = pool_window(ctx, Global);
  PoolPush p{};
  p.planes = u32(ctx, w.planes), p.H = u32(ctx, w.H), p.W = u32(ctx, w.W);
  p.OH = u32(ctx, w.OH), p.OW = u32(ctx, w.OW), p.KH = u32(ctx, w.KH), p.KW = u32(ctx, w.KW);
  p.sh = u32(ctx, w.sh), p.sw = u32(ctx, w.sw), p.ph = u32(ctx, w.ph), p.pw = u32(ctx, w.pw);
  p.ph_end = u32(ctx, w.ph_end), p.pw_end = u32(ctx, w.pw_end);
  p.dh = u32(ctx, w.dh), p.dw = u32(ctx, w.dw);
  p.mode = Mode, p.count_include_pad = w.count_include_pad;
  p.x_off = element_offset(x), p.y_off = element_offset(y);
  const Groups g = groups_for(static_cast<uint64_t>(y.numel()));
  if (y.numel()) dispatch(ctx, shaders::pool2d, {&x, &y}, p, g.x, g.y);
}

}  // namespace

LUMEN_REGISTER_KERNEL("vulkan", "conv2d", conv2d, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "fused_conv", conv2d, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "max_pool2d", (pool<0, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "avg_pool2d", (pool<1, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "global_max_pool", (pool<0, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "global_avg_pool", (pool<1, true>), DType::Float32);

}  // namespace lumen::vulkan
