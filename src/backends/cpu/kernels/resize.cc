// CPU resize: ONNX Resize as one pass per resized axis over the taps every backend shares
// (backends/common/resize_taps.h), in the tensor's own float type. A pass over an axis with
// contiguous elements after it (H of an NCHW image) adds whole rows scaled by each tap's weight,
// which the compiler vectorizes; a pass over the innermost axis (W) gathers. Passes are shared out
// over the thread pool by (outer index, output position).
#include <algorithm>
#include <vector>

#include "backends/common/resize_taps.h"
#include "core/kernel.h"

namespace lumen {
namespace {

template <class T>
void resample_axis(ThreadPool &pool, const T *in, T *out, int64_t outer, int64_t in_w,
                   int64_t out_w, int64_t inner, const AxisTaps &taps, T extrapolation) {
  std::vector<T> weight(taps.weight.begin(), taps.weight.end());
  const int64_t k_taps = taps.taps;
  const int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, inner * k_taps));
  pool.parallel_for(outer * out_w, grain, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      const int64_t a = job / out_w, y = job % out_w;
      T *dst = out + (a * out_w + y) * inner;
      if (taps.extrapolated[y]) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      const int64_t *index = taps.index.data() + y * k_taps;
      const T *w = weight.data() + y * k_taps;
      const T *src = in + a * in_w * inner;
      if (inner == 1) {
        T acc = 0;
        for (int64_t k = 0; k < k_taps; ++k) acc += w[k] * src[index[k]];
        *dst = acc;
        continue;
      }
      const T *row = src + index[0] * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] = w[0] * row[i];
      for (int64_t k = 1; k < k_taps; ++k) {
        if (w[k] == 0) continue;  // nearest and edge taps
        row = src + index[k] * inner;
        const T wk = w[k];
        for (int64_t i = 0; i < inner; ++i) dst[i] += wk * row[i];
      }
    }
  });
}

template <class T>
void resize(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const ResizeOptions o = ResizeOptions::from(ctx.attrs);
  const ResizeGeometry g = resize_geometry(ctx, o);
  std::vector<int64_t> dims = x.shape().dims();
  // Each pass reads the previous one's result; the last pass writes the output.
  struct AxisPass {
    size_t axis;
    AxisTaps taps;
  };
  std::vector<AxisPass> passes;
  for (int64_t axis : g.axes) {
    const auto a = size_t(axis);
    AxisTaps taps = resize_taps(o, dims[a], y.shape()[a], g.scale[a], g.roi_start[a], g.roi_end[a]);
    if (taps.identity) continue;
    if (y.shape()[a] > 0 && dims[a] == 0)
      ctx.fail("cannot resize an empty axis ", a, " to ", y.shape()[a]);
    passes.push_back({a, std::move(taps)});
  }
  if (y.numel() == 0) return;
  // The pass over the last axis gathers one element at a time; the others scale whole rows.
  // Shrinking passes go first and growing ones last, so each pass works on as little data as it
  // can, and of the growing ones the last axis's goes first: DeepLab's 14x14 -> 224x224 gathers
  // 66K elements that way instead of 1M (3.3x faster).
  const size_t last_axis = dims.size() - 1;
  auto rank = [&](const AxisPass &p) {
    if (y.shape()[p.axis] <= dims[p.axis]) return 0;
    return p.axis == last_axis ? 1 : 2;
  };
  std::stable_sort(passes.begin(), passes.end(),
                   [&](const AxisPass &a, const AxisPass &b) { return rank(a) < rank(b); });
  if (passes.empty()) {
    std::copy_n(x.data<T>(), x.numel(), y.data<T>());
    return;
  }
  std::vector<T> buffers[2];
  const T *in = x.data<T>();
  for (size_t p = 0; p < passes.size(); ++p) {
    const size_t a = passes[p].axis;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= dims[d];
    for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
    const int64_t in_w = dims[a], out_w = y.shape()[a];
    T *out = y.data<T>();
    if (p + 1 < passes.size()) {
      buffers[p % 2].resize(size_t(outer * out_w * inner));
      out = buffers[p % 2].data();
    }
    resample_axis<T>(ctx.pool, in, out, outer, in_w, out_w, inner, passes[p].taps,
                     T(o.extrapolation));
    dims[a] = out_w;
    in = out;
  }
}

LUMEN_REGISTER_KERNEL("cpu", "resize", resize<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "resize", resize<double>, DType::Float64);

}  // namespace
}  // namespace lumen
