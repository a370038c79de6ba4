// "conv2d": ONNX Conv on NCHW tensors. x [N, C, H, W], w [M, C/group, kH, kW], optional bias [M].
// Attributes (ONNX names): strides=[1,1], pads=[h_begin, w_begin, h_end, w_end]=[0,0,0,0],
// dilations=[1,1], group=1; kernel_shape, when given, must match w.
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

// One spatial output size: floor((in + pads - dilation * (k - 1) - 1) / stride) + 1.
int64_t conv_out_dim(const InferContext &ctx, const char *axis, int64_t in, int64_t k,
                     int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation,
                     const Shape &x, const Shape &w) {
  if (in == kUnknownDim || k == kUnknownDim) return kUnknownDim;
  const int64_t effective = checked_add(checked_mul(dilation, k - 1, "conv kernel extent"), 1);
  const int64_t padded = checked_add(in, checked_add(pad_begin, pad_end), "padded input size");
  if (padded < effective)
    ctx.fail("kernel ", axis, " extent ", effective, " (kernel ", k, ", dilation ", dilation,
             ") is larger than the padded input ", padded, " (input ", x.to_string(), ", weight ",
             w.to_string(), ")");
  return (padded - effective) / stride + 1;
}

std::vector<TensorType> infer_conv2d(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &w = ctx.input(1);
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    ctx.fail("expected float32 or float64 input, got ", dtype_name(x.dtype));
  if (w.dtype != x.dtype)
    ctx.fail("weight must have the input's dtype ", dtype_name(x.dtype), ", got ",
             dtype_name(w.dtype));
  if (x.shape.rank() != 4)
    ctx.fail("input must be 4-D [N, C, H, W], got shape ", x.shape.to_string());
  if (w.shape.rank() != 4)
    ctx.fail("weight must be 4-D [M, C/group, kH, kW], got shape ", w.shape.to_string());
  const auto strides = ints_attr(ctx, "strides", {1, 1}, 1);
  const auto pads = ints_attr(ctx, "pads", {0, 0, 0, 0}, 0);
  const auto dilations = ints_attr(ctx, "dilations", {1, 1}, 1);
  const int64_t group = ctx.attrs.get_int("group", 1);
  if (group < 1) ctx.fail("attribute 'group' must be >= 1, got ", group);
  const std::string auto_pad = ctx.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET")
    ctx.fail("auto_pad '", auto_pad, "' is not supported; give explicit pads");
  const int64_t c = x.shape[1], m = w.shape[0];
  if (c != kUnknownDim && c % group != 0)
    ctx.fail("input channels ", c, " are not divisible by group ", group, " (input ",
             x.shape.to_string(), ")");
  if (m != kUnknownDim && m % group != 0)
    ctx.fail("output channels ", m, " are not divisible by group ", group, " (weight ",
             w.shape.to_string(), ")");
  if (c != kUnknownDim && w.shape[1] != kUnknownDim && w.shape[1] != c / group)
    ctx.fail("weight ", w.shape.to_string(), " expects ", w.shape[1],
             " input channels per group, but input ", x.shape.to_string(), " with group ", group,
             " has ", c / group);
  if (ctx.attrs.has("kernel_shape")) {
    const auto ks = ctx.attrs.get_ints("kernel_shape", {});
    if (ks.size() != 2 || (w.shape[2] != kUnknownDim && ks[0] != w.shape[2]) ||
        (w.shape[3] != kUnknownDim && ks[1] != w.shape[3]))
      ctx.fail("attribute 'kernel_shape' does not match weight ", w.shape.to_string());
  }
  if (ctx.has_input(2)) {
    const TensorType &b = ctx.input(2);
    if (b.dtype != x.dtype)
      ctx.fail("bias must have the input's dtype ", dtype_name(x.dtype), ", got ",
               dtype_name(b.dtype));
    if (b.shape.rank() != 1 || (b.shape[0] != kUnknownDim && m != kUnknownDim && b.shape[0] != m))
      ctx.fail("bias must have shape [", m, "], got ", b.shape.to_string());
  }
  const int64_t oh = conv_out_dim(ctx, "height", x.shape[2], w.shape[2], strides[0], pads[0],
                                  pads[2], dilations[0], x.shape, w.shape);
  const int64_t ow = conv_out_dim(ctx, "width", x.shape[3], w.shape[3], strides[1], pads[1],
                                  pads[3], dilations[1], x.shape, w.shape);
  return {{x.dtype, Shape{x.shape[0], m, oh, ow}}};
}

LUMEN_REGISTER_OP({.name = "conv2d", .min_inputs = 2, .max_inputs = 3, .infer = infer_conv2d});

}  // namespace
}  // namespace lumen
