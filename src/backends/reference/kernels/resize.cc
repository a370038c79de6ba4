// Reference resize: ONNX Resize as a sequence of 1-D resamplings, one per resized axis, in
// double, from the taps every backend shares (backends/common/resize_taps.h): each output position
// is the weighted sum of its source positions, or the extrapolation value. Shapes and attributes
// were checked by inference; the output tensor holds the output shape.
#include <vector>

#include "backends/common/f64_io.h"
#include "backends/common/resize_taps.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Resamples `data` (dims) along `axis` with `taps` to `out_w` positions.
std::vector<double> resize_axis(const std::vector<double> &data, std::vector<int64_t> &dims,
                                size_t axis, const AxisTaps &taps, int64_t out_w,
                                double extrapolation) {
  const int64_t in_w = dims[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<double> out(static_cast<size_t>(outer * out_w * inner));
  for (int64_t y = 0; y < out_w; ++y)
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        double acc = 0;
        if (taps.extrapolated[y]) {
          acc = extrapolation;
        } else {
          for (int64_t k = 0; k < taps.taps; ++k)
            acc += taps.weight[y * taps.taps + k] *
                   data[(a * in_w + taps.index[y * taps.taps + k]) * inner + i];
        }
        out[(a * out_w + y) * inner + i] = acc;
      }
  dims[axis] = out_w;
  return out;
}

void resize(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const ResizeOptions o = ResizeOptions::from(ctx.attrs);
  const ResizeGeometry g = resize_geometry(ctx, o);
  std::vector<int64_t> dims = x.shape().dims();
  std::vector<double> data = to_f64(ctx, x);
  for (int64_t axis : g.axes) {
    const auto a = size_t(axis);
    const int64_t out_w = y.shape()[a];
    const AxisTaps taps = resize_taps(o, dims[a], out_w, g.scale[a], g.roi_start[a], g.roi_end[a]);
    if (taps.identity) continue;
    if (out_w > 0 && dims[a] == 0) ctx.fail("cannot resize an empty axis ", a, " to ", out_w);
    if (out_w == 0 || data.empty()) {
      dims[a] = out_w;
      data.assign(size_t(Shape(dims).numel()), 0.0);
      continue;
    }
    data = resize_axis(data, dims, a, taps, out_w, o.extrapolation);
  }
  from_f64(ctx, y, data);
}

LUMEN_REGISTER_KERNEL("reference", "resize", resize, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace
}  // namespace lumen
