// resize on Vulkan (ONNX Resize, every mode, coordinate transformation and antialias): one
// dispatch of resize_axis.comp per resized axis, with that axis's taps (backends/common/
// resize_taps.h, the same ones the CPU and reference kernels use) uploaded as a table, float32.
// The roi, scales and sizes are read from their host copies.
#include <limits>

#include "backends/common/resize_taps.h"
#include "backends/vulkan/kernels/strided.h"
#include "backends/vulkan/vulkan_stream.h"
#include "core/backend.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

void resize(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const ResizeOptions options = ResizeOptions::from(ctx.attrs);
  const std::vector<ResizePass> pending = device_resize_passes(ctx, options);
  if (y.numel() > std::numeric_limits<uint32_t>::max() ||
      x.numel() > std::numeric_limits<uint32_t>::max())
    ctx.fail("over 2^32 elements");
  auto *stream = dynamic_cast<VulkanStream *>(ctx.stream);
  Backend &vulkan = get_backend("vulkan");
  std::vector<int64_t> dims = x.shape().dims();
  const Tensor *from = &x;
  Tensor intermediate;
  if (pending.empty()) {
    const std::vector<int64_t> own = contiguous_strides(y.shape());
    return strided_copy(ctx, x, y, y.shape(), own, own);
  }
  for (size_t p = 0; p < pending.size(); ++p) {
    const auto &[a, taps] = pending[p];
    const int64_t in_w = dims[a], out_w = y.shape()[a];
    if (out_w > 0 && in_w == 0) ctx.fail("cannot resize an empty axis ", a, " to ", out_w);
    dims[a] = out_w;
    const bool last = p + 1 == pending.size();
    Tensor next = last ? Tensor() : Tensor::empty(Shape(dims), DType::Float32, &vulkan.allocator());
    Tensor &to = last ? y : next;
    if (to.numel() == 0) return;  // an empty output: nothing to compute, here or after
    Tensor table =
        Tensor::empty(Shape{out_w * (2 * taps.taps + 1)}, DType::Int32, &vulkan.allocator());
    vulkan.copy(table, taps_table(taps, out_w), ctx.stream);
    int64_t inner = 1;
    for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
    struct Push {
      uint32_t n, in_w, out_w, inner, count, x_off, taps_off, y_off;
      float extrapolation;
    } push{u32(ctx, to.numel()),  u32(ctx, in_w),      u32(ctx, out_w),
           u32(ctx, inner),       u32(ctx, taps.taps), element_offset(*from),
           element_offset(table), element_offset(to),  static_cast<float>(options.extrapolation)};
    const Groups g = groups_for(push.n);
    dispatch(ctx, shaders::resize_axis, {from, &table, &to}, push, g.x, g.y);
    if (stream) {
      stream->retain(table);
      if (!last) stream->retain(next);
    }
    intermediate = std::move(next);
    from = &intermediate;
  }
}

}  // namespace

LUMEN_REGISTER_KERNEL("vulkan", "resize", resize, DType::Float32);

}  // namespace lumen::vulkan
