// ONNX Resize semantics shared by the backends' kernels: the attributes, the scale and region of
// interest of each axis (from scales or sizes, with keep_aspect_ratio_policy), and for one axis
// the taps of every output position: which source positions it reads (clamped to the axis: edge
// padding) with which weights, or the extrapolation value (tf_crop_and_resize outside the roi).
// A resize is separable: kernels resample one axis after another.
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.h"

#pragma once

namespace lumen {

struct ResizeOptions {
  std::string mode, ctm, nearest_mode, policy;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;

  static ResizeOptions from(const Attributes &attrs);
};

// Per axis of the input: the scale (1 for axes not resized) and the roi [start, end].
struct ResizeGeometry {
  std::vector<int64_t> axes;  // the resized axes, in the order they are resampled
  std::vector<double> scale, roi_start, roi_end;
};

// Reads axes, roi (input 1), scales (input 2) or sizes (input 3) of a resize step.
ResizeGeometry resize_geometry(const KernelContext &ctx, const ResizeOptions &options);

struct AxisTaps {
  int64_t taps = 0;                   // per output position
  std::vector<int64_t> index;         // [out][taps] source positions, clamped to the axis
  std::vector<double> weight;         // [out][taps]
  std::vector<uint8_t> extrapolated;  // [out]: 1 when the output is the extrapolation value
  bool identity = false;              // every output reads its own position with weight 1
};

// The taps of resampling an axis of `in` positions to `out` positions.
AxisTaps resize_taps(const ResizeOptions &options, int64_t in, int64_t out, double scale,
                     double roi_start, double roi_end);

// A device kernel's resize: the axes that change anything, in order, with their taps, from the
// roi, scales or sizes' host copies (KernelContext::host_input; fails where one exists only on
// the device).
struct ResizePass {
  size_t axis;
  AxisTaps taps;
};
std::vector<ResizePass> device_resize_passes(const KernelContext &ctx,
                                             const ResizeOptions &options);

// The taps as a device kernel reads them: per output position, its `taps` source indices, their
// weights (float32 bits) and whether it is extrapolated, as int32 words [out][2 * taps + 1].
Tensor taps_table(const AxisTaps &taps, int64_t out_w);

}  // namespace lumen
