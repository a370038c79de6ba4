// Reference pooling: every window position checked one by one. Max propagates NaN; an average
// over a window with nothing to count is NaN (0 / 0), a max over one is -inf.
#include <cmath>
#include <limits>
#include <vector>

#include "core/kernel.h"

namespace lumen {
namespace {

struct Pool2dAttrs {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool count_include_pad;
};

Pool2dAttrs read_attrs(const KernelContext &ctx) {
  return {ctx.attrs.get_ints("kernel_shape", {}), ctx.attrs.get_ints("strides", {1, 1}),
          ctx.attrs.get_ints("pads", {0, 0, 0, 0}), ctx.attrs.get_ints("dilations", {1, 1}),
          ctx.attrs.get_int("count_include_pad", 0) != 0};
}

template <class T, bool kIsMax>
void pool2d(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Tensor &ty = ctx.output(0);
  const Pool2dAttrs at = read_attrs(ctx);
  if (at.kernel.size() != 2) ctx.fail("attribute 'kernel_shape' must have 2 values");
  const int64_t planes = tx.shape()[0] * tx.shape()[1];
  const int64_t h = tx.shape()[2], w = tx.shape()[3];
  const int64_t oh = ty.shape()[2], ow = ty.shape()[3];
  const T *x = tx.data<T>();
  T *y = ty.data<T>();
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        double sum = 0;
        int64_t valid = 0, in_padded = 0;
        for (int64_t a = 0; a < at.kernel[0]; ++a)
          for (int64_t b = 0; b < at.kernel[1]; ++b) {
            const int64_t ih = i * at.strides[0] - at.pads[0] + a * at.dilations[0];
            const int64_t iw = j * at.strides[1] - at.pads[1] + b * at.dilations[1];
            // Inside the padded input (positions past the end padding, from ceil_mode, are not).
            if (ih < h + at.pads[2] && iw < w + at.pads[3]) ++in_padded;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const double v = static_cast<double>(x[(q * h + ih) * w + iw]);
            ++valid;
            sum += v;
            if (std::isnan(v) || v > best) best = std::isnan(best) ? best : v;
          }
        double out;
        if (kIsMax)
          out = best;
        else
          out = sum / static_cast<double>(at.count_include_pad ? in_padded : valid);
        y[(q * oh + i) * ow + j] = static_cast<T>(out);
      }
}

template <class T, bool kIsMax>
void global_pool(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const int64_t planes = tx.shape()[0] * tx.shape()[1];
  const int64_t size = planes == 0 ? 0 : tx.numel() / planes;
  const T *x = tx.data<T>();
  T *y = ctx.output(0).data<T>();
  for (int64_t q = 0; q < planes; ++q) {
    double best = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t i = 0; i < size; ++i) {
      const double v = static_cast<double>(x[q * size + i]);
      sum += v;
      if (std::isnan(v) || v > best) best = std::isnan(best) ? best : v;
    }
    y[q] = static_cast<T>(kIsMax ? best : sum / static_cast<double>(size));
  }
}

LUMEN_REGISTER_KERNEL("reference", "max_pool2d", (pool2d<float, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "max_pool2d", (pool2d<double, true>), DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "avg_pool2d", (pool2d<float, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "avg_pool2d", (pool2d<double, false>), DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "global_max_pool", (global_pool<float, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "global_max_pool", (global_pool<double, true>), DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "global_avg_pool", (global_pool<float, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "global_avg_pool", (global_pool<double, false>), DType::Float64);

}  // namespace
}  // namespace lumen
