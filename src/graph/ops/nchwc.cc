// The channel-blocked image layout (NCHWc), created by the nchwc_layout pass for chains of convs:
// a [N, C, H, W] image stored as [N, C / c, H, W, c], the c channels of a block next to each other
// at every pixel, so a kernel holds one pixel's block in a vector. Convs in this layout read their
// input and write their output without a transpose or packing step, and a chain of them keeps the
// layout between its convs. Attribute "block" (c, default 8) on every op.
//   to_nchwc(x): [N, C, H, W] -> [N, C / c, H, W, c]; C must be a multiple of c.
//   from_nchwc(x): the inverse.
//   nchwc_conv(x, w, b?, z?): fused_conv (same attributes, activation included) on a blocked x,
//     giving a blocked y; w, b stay [M, C / group, kH, kW] and [M]; z is blocked like y. C and M
//     are multiples of c. A dense conv (one group) may read a plain [N, C, H, W] x of any C
//     instead: a chain's first conv on an image of 3 channels writes its blocked output directly.
//   nchwc_pointwise_depthwise(x, w1, b1?, w2, b2?): a pointwise nchwc_conv feeding a depthwise
//     one, as one step (graph/ops/pointwise_depthwise.h).
//   nchwc_max_pool2d(x), nchwc_avg_pool2d(x): max_pool2d / avg_pool2d (same attributes) on a
//     blocked x, giving a blocked y.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "graph/ops/pointwise_depthwise.h"

namespace lumen {
namespace {

int64_t block_of(const InferContext &ctx) {
  const int64_t block = ctx.attrs.get_int("block", 8);
  if (block < 1 || block > 64) ctx.fail("attribute block must be in [1, 64], got ", block);
  return block;
}

// [N, C, H, W] -> [N, C / block, H, W, block].
Shape blocked(const InferContext &ctx, const Shape &s, int64_t block, const char *what) {
  if (s.rank() != 4) ctx.fail(what, " must be 4-D [N, C, H, W], got ", s.to_string());
  if (s[1] == kUnknownDim || s[1] % block != 0)
    ctx.fail(what, " ", s.to_string(), ": channels must be a known multiple of the block ", block);
  return Shape{s[0], s[1] / block, s[2], s[3], block};
}

// [N, C / block, H, W, block] -> [N, C, H, W].
Shape unblocked(const InferContext &ctx, const Shape &s, int64_t block, const char *what) {
  if (s.rank() != 5 || s[4] != block)
    ctx.fail(what, " must be 5-D [N, C / ", block, ", H, W, ", block, "], got ", s.to_string());
  if (s[1] == kUnknownDim) ctx.fail(what, " ", s.to_string(), ": the channel blocks must be known");
  return Shape{s[0], s[1] * block, s[2], s[3]};
}

std::vector<TensorType> infer_to_nchwc(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  return {{x.dtype, blocked(ctx, x.shape, block_of(ctx), "input")}};
}

std::vector<TensorType> infer_from_nchwc(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  return {{x.dtype, unblocked(ctx, x.shape, block_of(ctx), "input")}};
}

// The inference of plain op `plain_op` on `inputs` (x unblocked), its output blocked.
std::vector<TensorType> infer_as_plain(const InferContext &ctx, const char *plain_op,
                                       const std::vector<const TensorType *> &inputs) {
  Attributes attrs = ctx.attrs;
  attrs.erase("block");
  auto out = get_op(plain_op).infer(InferContext{.inputs = inputs,
                                                 .attrs = attrs,
                                                 .op = ctx.op,
                                                 .node = ctx.node,
                                                 .values = ctx.values,
                                                 .shapes_known = ctx.shapes_known});
  out[0].shape = blocked(ctx, out[0].shape, block_of(ctx), "output");
  return out;
}

std::vector<TensorType> infer_nchwc_conv(const InferContext &ctx) {
  const int64_t block = block_of(ctx);
  // fused_conv's inference on the unblocked types checks everything else.
  const bool plain = ctx.input(0).shape.rank() == 4;
  if (plain && ctx.attrs.get_int("group", 1) != 1)
    ctx.fail("a plain (4-D) input x needs a dense conv (group 1)");
  const TensorType x{
      ctx.input(0).dtype,
      plain ? ctx.input(0).shape : unblocked(ctx, ctx.input(0).shape, block, "input x")};
  std::vector<const TensorType *> inputs(ctx.inputs.begin(), ctx.inputs.end());
  inputs[0] = &x;
  TensorType z;
  if (ctx.has_input(3)) {
    z = {ctx.input(3).dtype, unblocked(ctx, ctx.input(3).shape, block, "residual z")};
    inputs[3] = &z;
  }
  return infer_as_plain(ctx, "fused_conv", inputs);
}

// Both convs' inference: the pointwise one must be 1x1, one group, stride 1, unpadded, on a
// blocked x; the depthwise one must have one channel per group.
std::vector<TensorType> infer_nchwc_pointwise_depthwise(const InferContext &ctx) {
  if (ctx.attrs.has(std::string(kPointwiseDepthwiseBandRowsAttr)) &&
      ctx.attrs.get_int(std::string(kPointwiseDepthwiseBandRowsAttr), 0) < 1)
    ctx.fail("attribute ", kPointwiseDepthwiseBandRowsAttr, " must be at least 1");
  if (!ctx.has_input(3)) ctx.fail("weight w2 (input 3) is required");
  if (ctx.input(0).shape.rank() != 5) ctx.fail("input x must be blocked (5-D)");
  const Attributes pointwise = pointwise_stage_attributes(ctx.attrs);
  const Shape &w1 = ctx.input(1).shape;
  const auto ones = [](const std::vector<int64_t> &v) {
    return std::all_of(v.begin(), v.end(), [](int64_t d) { return d == 1; });
  };
  const auto pads = pointwise.get_ints("pads", {});
  if (w1.rank() != 4 || w1[2] != 1 || w1[3] != 1 || pointwise.get_int("group", 1) != 1 ||
      !ones(pointwise.get_ints("strides", {})) ||
      !std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
    ctx.fail("the pointwise conv must be 1x1, one group, stride 1 and unpadded; got weight w1 ",
             w1.to_string());
  const OpSchema &conv = get_op("nchwc_conv");
  const std::vector<TensorType> t = conv.infer(InferContext{
      .inputs = {ctx.inputs[0], ctx.inputs[1], ctx.has_input(2) ? ctx.inputs[2] : nullptr},
      .attrs = pointwise,
      .op = ctx.op,
      .node = ctx.node,
      .shapes_known = ctx.shapes_known});
  const Attributes depthwise = depthwise_stage_attributes(ctx.attrs);
  const Shape &w2 = ctx.input(3).shape;
  if (w2.rank() != 4 || w2[1] != 1 || w2[0] != depthwise.get_int("group", 1))
    ctx.fail("the second conv must be depthwise (weight [C, 1, kH, kW], group C); got weight w2 ",
             w2.to_string(), ", group ", depthwise.get_int("group", 1));
  return conv.infer(
      InferContext{.inputs = {&t[0], ctx.inputs[3], ctx.has_input(4) ? ctx.inputs[4] : nullptr},
                   .attrs = depthwise,
                   .op = ctx.op,
                   .node = ctx.node,
                   .shapes_known = ctx.shapes_known});
}

// Pooling on a blocked x.
template <const char *kPlainOp>
std::vector<TensorType> infer_blocked_pool(const InferContext &ctx) {
  const TensorType x{ctx.input(0).dtype,
                     unblocked(ctx, ctx.input(0).shape, block_of(ctx), "input x")};
  return infer_as_plain(ctx, kPlainOp, {&x});
}

constexpr char kMaxPool[] = "max_pool2d";
constexpr char kAvgPool[] = "avg_pool2d";

}  // namespace

LUMEN_REGISTER_OP({.name = "nchwc_max_pool2d", .infer = infer_blocked_pool<kMaxPool>});
LUMEN_REGISTER_OP({.name = "nchwc_avg_pool2d", .infer = infer_blocked_pool<kAvgPool>});
LUMEN_REGISTER_OP({.name = "to_nchwc", .infer = infer_to_nchwc});
LUMEN_REGISTER_OP({.name = "from_nchwc", .infer = infer_from_nchwc});
LUMEN_REGISTER_OP(
    {.name = "nchwc_conv", .min_inputs = 2, .max_inputs = 4, .infer = infer_nchwc_conv});
LUMEN_REGISTER_OP({.name = "nchwc_pointwise_depthwise",
                   .min_inputs = 2,  // and w2: b1 may be absent before it
                   .max_inputs = 5,
                   .infer = infer_nchwc_pointwise_depthwise});

}  // namespace lumen
