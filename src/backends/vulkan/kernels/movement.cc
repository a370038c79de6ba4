// Data movement on Vulkan, mostly one strided copy (strided_copy.comp): reshape-like ops (when the
// plan could not make them views), transpose, concat, expand and slice; gather (gather.comp); on
// float32 and int32 (the
// copy moves 32-bit words; int64 tensors are mostly shapes, which the host computes with); and
// constant_of_shape (fill.comp).
#include <algorithm>
#include <cstring>

#include "backends/common/axis_layout.h"
#include "backends/common/device_kernel_params.h"
#include "backends/vulkan/kernels/strided.h"
#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

void copy_whole(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (x.raw_data() == y.raw_data()) return;  // the plan made it a view
  const Shape flat{x.numel()};
  strided_copy(ctx, x, y, flat, {1}, {1});
}

void transpose(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  strided_copy(ctx, x, y, y.shape(), transpose_read_strides(x.shape(), ctx.attrs),
               contiguous_strides(y.shape()));
}

void concat(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const size_t axis = y.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const std::vector<int64_t> out = contiguous_strides(y.shape());
  int64_t at = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor &x = ctx.input(i);
    if (x.raw_data() != static_cast<const std::byte *>(y.raw_data()) +
                            at * out[axis] * static_cast<int64_t>(dtype_size(y.dtype())))
      strided_copy(ctx, x, y, x.shape(), contiguous_strides(x.shape()), out, 0, at * out[axis]);
    at += x.shape()[axis];
  }
}

void expand(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  strided_copy(ctx, x, y, y.shape(), broadcast_strides(x.shape(), y.shape()),
               contiguous_strides(y.shape()));
}

// Slice as one strided copy; its starts, axes and steps are read on the host (slice_layout).
void slice(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const SliceLayout slice = slice_layout(ctx, x);
  strided_copy(ctx, x, y, y.shape(), slice.read, contiguous_strides(y.shape()), slice.offset, 0);
}

// Indices are checked on the host first (checked_gather_axis): a shader cannot report a bad one.
void gather(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const size_t axis = checked_gather_axis(ctx);
  const int64_t n = data.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= data.shape()[d];
  for (size_t d = axis + 1; d < data.rank(); ++d) inner *= data.shape()[d];
  const uint32_t w = words_per_element(ctx, data.dtype());
  const uint32_t idx_words = idx.dtype() == DType::Int64 ? 2 : 1;
  struct Push {
    uint32_t n, inner_words, n_idx, axis_len, d_off, i_off, o_off, idx_words;
  } push{u32(ctx, y.numel() * w),  u32(ctx, inner * w),
         u32(ctx, idx.numel()),    u32(ctx, n),
         element_offset(data) * w, element_offset(idx) * idx_words,
         element_offset(y) * w,    idx_words};
  const Groups g = groups_for(push.n);
  if (push.n && outer) dispatch(ctx, shaders::gather, {&data, &idx, &y}, push, g.x, g.y);
}

// Every element the one-element attribute `value` (default float32 0); the shape input is only
// read by inference.
void constant_of_shape(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const uint32_t w = words_per_element(ctx, y.dtype());
  uint32_t words[2] = {0, 0};
  if (const Tensor *v = ctx.attrs.get_tensor("value")) {
    if (v->dtype() != y.dtype() || v->numel() != 1)
      ctx.fail("value must hold one ", dtype_name(y.dtype()));
    std::memcpy(words, v->contiguous().raw_data(), dtype_size(y.dtype()));
  }
  struct Push {
    uint32_t n, off, words, lo, hi;
  } push{u32(ctx, y.numel() * w), element_offset(y) * w, w, words[0], words[1]};
  const Groups g = groups_for(push.n);
  if (push.n) dispatch(ctx, shaders::fill, {&y}, push, g.x, g.y);
}

// The fill shader writes 32-bit words: a value of 1 or 2 bytes (bool, float16) stays on the host.
std::string constant_of_shape_limits(const NodeQuery &node) {
  const Tensor *v = node.attributes().get_tensor("value");
  const size_t size = v ? dtype_size(v->dtype()) : 4;
  return size % 4
             ? str("a ", dtype_name(v->dtype()), " value (the Vulkan fill writes 32-bit words)")
             : "";
}

}  // namespace

#define LUMEN_VULKAN_MOVEMENT(op, fn) \
  LUMEN_REGISTER_KERNEL("vulkan", op, fn, DType::Float32, DType::Int32)
LUMEN_VULKAN_MOVEMENT("reshape", copy_whole);
LUMEN_VULKAN_MOVEMENT("flatten", copy_whole);
LUMEN_VULKAN_MOVEMENT("squeeze", copy_whole);
LUMEN_VULKAN_MOVEMENT("unsqueeze", copy_whole);
LUMEN_VULKAN_MOVEMENT("transpose", transpose);
LUMEN_VULKAN_MOVEMENT("concat", concat);
LUMEN_VULKAN_MOVEMENT("expand", expand);
LUMEN_VULKAN_MOVEMENT("slice", slice);
LUMEN_VULKAN_MOVEMENT("gather", gather);
LUMEN_REGISTER_KERNEL("vulkan", "constant_of_shape", constant_of_shape, DType::Int64, DType::Int32);
LUMEN_REGISTER_SUPPORTS("vulkan", "constant_of_shape", constant_of_shape_limits, DType::Int64,
                        DType::Int32);

}  // namespace lumen::vulkan
