// resize on Vulkan (ONNX Resize, every mode, coordinate transformation and antialias): one
// dispatch of resize_axis.comp per resized axis, with that axis's taps (backends/common/
// resize_taps.h, the same ones the CPU and reference kernels use) uploaded as a table, float32.
// The roi, scales and sizes are read from their host copies.
#include <cstring>
#include <limits>
#include <utility>

#include "backends/common/resize_taps.h"
#include "backends/vulkan/kernels/strided.h"
#include "backends/vulkan/vulkan_stream.h"
#include "core/backend.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

// Per output position: its indices, its weights (as float bits) and whether it is extrapolated.
Tensor taps_table(const AxisTaps &taps, int64_t out_w) {
  const int64_t stride = 2 * taps.taps + 1;
  Tensor table = Tensor::empty(Shape{out_w * stride}, DType::Int32);
  auto *words = table.data<int32_t>();
  for (int64_t o = 0; o < out_w; ++o) {
    int32_t *row = words + o * stride;
    for (int64_t k = 0; k < taps.taps; ++k) {
      row[k] = static_cast<int32_t>(taps.index[o * taps.taps + k]);
      const float w = static_cast<float>(taps.weight[o * taps.taps + k]);
      std::memcpy(&row[taps.taps + k], &w, sizeof w);
    }
    row[2 * taps.taps] = taps.extrapolated[o];
  }
  return table;
}

void resize(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  // The parameters as resize_geometry reads them: from the host.
  KernelContext host{.inputs = {&x},
                     .outputs = ctx.outputs,
                     .attrs = ctx.attrs,
                     .pool = ctx.pool,
                     .op = ctx.op,
                     .node = ctx.node};
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const Tensor *param = ctx.has_input(i) ? ctx.host_input(i) : nullptr;
    if (ctx.has_input(i) && !param)
      ctx.fail("input ", i, " (roi, scales or sizes) must be computed on the host, not the device");
    host.inputs.push_back(param);
  }
  const ResizeOptions options = ResizeOptions::from(ctx.attrs);
  const ResizeGeometry geometry = resize_geometry(host, options);
  if (y.numel() > std::numeric_limits<uint32_t>::max() ||
      x.numel() > std::numeric_limits<uint32_t>::max())
    ctx.fail("over 2^32 elements");
  auto *stream = dynamic_cast<VulkanStream *>(ctx.stream);
  Backend &vulkan = get_backend("vulkan");
  std::vector<int64_t> dims = x.shape().dims();
  const Tensor *from = &x;
  Tensor intermediate;
  // The axes that change anything, with their taps.
  std::vector<std::pair<size_t, AxisTaps>> pending;
  for (int64_t axis : geometry.axes) {
    const auto a = size_t(axis);
    AxisTaps taps = resize_taps(options, dims[a], y.shape()[a], geometry.scale[a],
                                geometry.roi_start[a], geometry.roi_end[a]);
    if (!taps.identity) pending.emplace_back(a, std::move(taps));
  }
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
