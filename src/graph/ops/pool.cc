// Pooling on NCHW tensors, ONNX semantics.
//   max_pool2d / avg_pool2d: kernel_shape (required, 2 ints), strides=[1,1],
//     pads=[h_begin, w_begin, h_end, w_end]=[0,0,0,0], ceil_mode=0; dilations=[1,1] (max only);
//     count_include_pad=0 (avg only).
//   global_avg_pool / global_max_pool: [N, C, spatial...] -> [N, C, 1, ...].
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

// ONNX/PyTorch output size. With ceil_mode a last window that would start in the end padding
// (past input + begin padding) is dropped.
int64_t pool_out_dim(const InferContext &ctx, const char *axis, int64_t in, int64_t k,
                     int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation,
                     bool ceil_mode, const Shape &x) {
  if (in == kUnknownDim) return kUnknownDim;
  const int64_t effective = checked_add(checked_mul(dilation, k - 1, "pool window extent"), 1);
  // A window lying in the padding only would have nothing to pool (onnxruntime refuses it too).
  if (pad_begin >= effective || pad_end >= effective)
    ctx.fail(axis, " pads ", pad_begin, " and ", pad_end,
             " must be smaller than the window extent ", effective, " (kernel ", k, ", dilation ",
             dilation, ")");
  const int64_t padded = checked_add(in, checked_add(pad_begin, pad_end), "padded input size");
  if (padded < effective)
    ctx.fail("window ", axis, " extent ", effective, " (kernel ", k, ", dilation ", dilation,
             ") is larger than the padded input ", padded, " (input ", x.to_string(), ")");
  const int64_t span = padded - effective;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

template <bool kIsMax>
std::vector<TensorType> infer_pool2d(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!computes_in_float(x.dtype))
    ctx.fail("expected a float16, bfloat16, float32 or float64 input, got ", dtype_name(x.dtype));
  if (x.shape.rank() != 4)
    ctx.fail("input must be 4-D [N, C, H, W], got shape ", x.shape.to_string());
  if (!ctx.attrs.has("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  const auto kernel = ints_attr(ctx, "kernel_shape", {1, 1}, 1);
  const auto strides = ints_attr(ctx, "strides", {1, 1}, 1);
  const auto pads = ints_attr(ctx, "pads", {0, 0, 0, 0}, 0);
  const auto dilations = ints_attr(ctx, "dilations", {1, 1}, 1);
  if (!kIsMax && (dilations[0] != 1 || dilations[1] != 1))
    ctx.fail("dilations are not supported for average pooling");
  const std::string auto_pad = ctx.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET")
    ctx.fail("auto_pad '", auto_pad, "' is not supported; give explicit pads");
  const bool ceil_mode = ctx.attrs.get_int("ceil_mode", 0) != 0;
  ctx.attrs.get_int("count_include_pad", 0);  // type-checked here, read by the kernels
  const int64_t oh = pool_out_dim(ctx, "height", x.shape[2], kernel[0], strides[0], pads[0],
                                  pads[2], dilations[0], ceil_mode, x.shape);
  const int64_t ow = pool_out_dim(ctx, "width", x.shape[3], kernel[1], strides[1], pads[1], pads[3],
                                  dilations[1], ceil_mode, x.shape);
  return {{x.dtype, Shape{x.shape[0], x.shape[1], oh, ow}}};
}

std::vector<TensorType> infer_global_pool(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!computes_in_float(x.dtype))
    ctx.fail("expected a float16, bfloat16, float32 or float64 input, got ", dtype_name(x.dtype));
  if (x.shape.rank() < 3)
    ctx.fail("input must be [N, C, spatial...] with at least one spatial dim, got shape ",
             x.shape.to_string());
  std::vector<int64_t> dims(x.shape.rank(), 1);
  dims[0] = x.shape[0];
  dims[1] = x.shape[1];
  return {{x.dtype, Shape(std::move(dims))}};
}

LUMEN_REGISTER_OP({.name = "max_pool2d", .infer = infer_pool2d<true>});
LUMEN_REGISTER_OP({.name = "avg_pool2d", .infer = infer_pool2d<false>});
LUMEN_REGISTER_OP({.name = "global_avg_pool", .infer = infer_global_pool});
LUMEN_REGISTER_OP({.name = "global_max_pool", .infer = infer_global_pool});

}  // namespace
}  // namespace lumen
