// What the device backends' kernels (Vulkan, CUDA) read on the host before they launch, shared so
// both read attributes and host inputs the same way: fixed-length int attributes, the kept and
// reduced dims of a reduction, Slice's first element and read strides, and Gather's indices
// checked against the axis (a device kernel cannot report a bad one).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/common/pool_window.h"
#include "core/kernel.h"
#include "graph/ops/reduce.h"

namespace lumen {

// Attribute `name` (or `fallback`), which must have fallback's length.
inline std::vector<int64_t> fixed_ints(const KernelContext &ctx, const char *name,
                                       std::vector<int64_t> fallback) {
  std::vector<int64_t> v = ctx.attrs.get_ints(name, fallback);
  if (v.size() != fallback.size())
    ctx.fail("attribute '", name, "' must have ", fallback.size(), " values");
  return v;
}

// The dims of contiguous `x` a reduction keeps and those it reduces, each with its element
// strides in x. Axes from input 1 (read on the host) or the attribute.
struct ReduceLayout {
  std::vector<int64_t> kept, kept_strides, reduced, reduced_strides;
};
inline ReduceLayout reduce_layout(const KernelContext &ctx, const Tensor &x) {
  const std::vector<int64_t> axes =
      ctx.has_input(1) ? ctx.host_input_ints(1, "axes") : ctx.attrs.get_ints("axes", {});
  std::vector<bool> mask;
  try {
    mask = reduce_detail::reduce_mask(axes, x.rank(),
                                      ctx.attrs.get_int("noop_with_empty_axes", 0) != 0);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  ReduceLayout r;
  for (size_t d = 0; d < x.rank(); ++d) {
    (mask[d] ? r.reduced : r.kept).push_back(x.shape()[d]);
    (mask[d] ? r.reduced_strides : r.kept_strides).push_back(strides[d]);
  }
  return r;
}

// Slice of contiguous `x` as a strided read: the element offset of the first element taken and,
// per dim, the stride between elements taken (negative for negative steps). Starts, axes and
// steps are read on the host (KernelContext::host_input_ints: the copies the graph holds there).
struct SliceLayout {
  int64_t offset = 0;
  std::vector<int64_t> read;
};
inline SliceLayout slice_layout(const KernelContext &ctx, const Tensor &x) {
  const std::vector<int64_t> starts = ctx.host_input_ints(1, "starts");
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (ctx.has_input(3)) {
    axes = ctx.host_input_ints(3, "axes");
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ctx.has_input(4)) steps = ctx.host_input_ints(4, "steps");
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, axes and steps must have the same length");
  const std::vector<int64_t> in = contiguous_strides(x.shape());
  SliceLayout s{0, in};
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t axis = x.shape().normalize_axis(axes[i]);
    const int64_t dim = x.shape()[axis], step = steps[i];
    int64_t start = starts[i];
    if (start < 0) start += dim;
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    s.offset += start * in[axis];
    s.read[axis] = in[axis] * step;
  }
  return s;
}

// The pooling window of a max/avg pool node (global: the whole plane).
inline PoolWindow pool_window(const KernelContext &ctx, bool global) {
  const Shape &x = ctx.input(0).shape(), &y = ctx.output(0).shape();
  if (ctx.outputs.size() > 1 && ctx.outputs[1])
    ctx.fail("the device kernel does not make max pooling's indices");
  PoolWindow w;
  if (global) {
    if (x.rank() < 2) ctx.fail("expects an input of rank 2 or more");
    w.planes = x[0] * x[1];
    for (size_t d = 2; d < x.rank(); ++d) w.W *= x[d];
    w.KW = w.W;
    return w;
  }
  if (x.rank() != 4) ctx.fail("expects a 4-D input");
  const auto kernel = fixed_ints(ctx, "kernel_shape", {0, 0}),
             strides = fixed_ints(ctx, "strides", {1, 1}),
             pads = fixed_ints(ctx, "pads", {0, 0, 0, 0}),
             dilations = fixed_ints(ctx, "dilations", {1, 1});
  w.planes = x[0] * x[1], w.H = x[2], w.W = x[3], w.OH = y[2], w.OW = y[3];
  w.KH = kernel[0], w.KW = kernel[1], w.sh = strides[0], w.sw = strides[1];
  w.ph = pads[0], w.pw = pads[1], w.ph_end = pads[2], w.pw_end = pads[3];
  w.dh = dilations[0], w.dw = dilations[1];
  w.count_include_pad = ctx.attrs.get_int("count_include_pad", 0) != 0;
  return w;
}

// Local response normalization over x [batch, channels, plane...]: the window of `size` channels
// and its attributes.
struct LrnWindow {
  int64_t batch = 0, channels = 0, plane = 1, size = 0;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.f;
};
inline LrnWindow lrn_window(const KernelContext &ctx) {
  const Shape &x = ctx.input(0).shape();
  if (x.rank() < 2) ctx.fail("expects an input of rank 2 or more");
  LrnWindow w;
  w.size = ctx.attrs.get_int("size", 0);
  if (w.size <= 0) ctx.fail("attribute 'size' must be positive");
  w.batch = x[0], w.channels = x[1];
  for (size_t d = 2; d < x.rank(); ++d) w.plane *= x[d];
  w.alpha = static_cast<float>(ctx.attrs.get_float("alpha", 1e-4));
  w.beta = static_cast<float>(ctx.attrs.get_float("beta", 0.75));
  w.bias = static_cast<float>(ctx.attrs.get_float("bias", 1.0));
  return w;
}

// Gather's axis, its indices (input 1) checked on the host from their host copy (model inputs,
// constants) against the axis' size.
inline size_t checked_gather_axis(const KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  const size_t axis = data.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const int64_t n = data.shape()[axis];
  if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32)
    ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype()));
  for (const int64_t v : ctx.host_input_ints(1, "indices"))
    if (v < -n || v >= n) ctx.fail("index ", v, " is out of range for dim ", axis, " of size ", n);
  return axis;
}

}  // namespace lumen
