// CPU layer_norm for the transformer case: float32, normalized over the last axis, scale and
// bias (optional) holding one value per position of that axis. Rows run in parallel on the
// runtime's pool; each row is two passes (mean, then centered variance, in double for accuracy)
// and a fused normalize-scale-shift pass. Every other case falls back to the reference kernel.
#include <algorithm>
#include <cmath>

#include "core/kernel.h"

namespace lumen {
namespace {

// Scale/bias of `d` values that only vary along the last axis ([d], [1, d], ...).
bool last_axis_param(const Tensor &p, int64_t d) {
  if (p.numel() != d || p.dtype() != DType::Float32) return false;
  const Shape &s = p.shape();
  return s.rank() >= 1 && s[s.rank() - 1] == d;
}

void layer_norm_f32(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  const int64_t d = shape.rank() ? shape[shape.rank() - 1] : 1;
  const bool fast = tx.dtype() == DType::Float32 && axis + 1 == shape.rank() && d > 0 &&
                    last_axis_param(ctx.input(1), d) &&
                    (!ctx.has_input(2) || last_axis_param(ctx.input(2), d)) &&
                    ctx.output(1).dtype() == DType::Float32;
  if (!fast) {
    KernelFn ref = kernel_registry("reference").find("layer_norm", tx.dtype());
    if (!ref) ctx.fail("no reference layer_norm kernel for ", dtype_name(tx.dtype()));
    return ref(ctx);
  }
  const int64_t rows = tx.numel() / d;
  const float *x = tx.data<float>();
  const float *scale = ctx.input(1).data<float>();
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float *y = ctx.output(0).data<float>();
  float *mean_out = ctx.output(1).data<float>();
  float *inv_out = ctx.output(2).data<float>();
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 16384 / d), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *xr = x + r * d;
      float *yr = y + r * d;
      double sum = 0;
      for (int64_t i = 0; i < d; ++i) sum += xr[i];
      const double mean = sum / double(d);
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) {
        const double c = xr[i] - mean;
        sq += c * c;
      }
      const double inv = 1.0 / std::sqrt(sq / double(d) + eps);
      const float m = float(mean), s = float(inv);
      if (bias)
        for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * scale[i] + bias[i];
      else
        for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * scale[i];
      mean_out[r] = m;
      inv_out[r] = s;
    }
  });
}

LUMEN_REGISTER_KERNEL("cpu", "layer_norm", layer_norm_f32, DType::Float32);

}  // namespace
}  // namespace lumen
