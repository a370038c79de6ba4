// CPU layer_norm for the transformer case: float32, normalized over the last axis, scale and
// bias (optional) holding one value per position of that axis. Rows run in parallel on the
// runtime's pool; each row is two passes (mean, then centered variance, in double for accuracy)
// and a fused normalize-scale-shift pass. Every other case falls back to the reference kernel.
//
// rms_norm for float32 the same way, over the trailing dims, with a scale per normalized position.
//
// And instance_norm / group_norm for float32: the same two passes per (image, group of
// channels), in double lanes the compiler can vectorize, items in parallel, then each channel
// normalized with its scale and bias (or its group's, with scale_per_group).
#include <algorithm>
#include <cmath>

#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Scale/bias of `d` values that only vary along the last axis ([d], [1, d], ...).
bool last_axis_param(const Tensor &p, int64_t d) {
  if (p.numel() != d || p.dtype() != DType::Float32) return false;
  const Shape &s = p.shape();
  return s.rank() >= 1 && s[s.rank() - 1] == d;
}

constexpr int kLanes = 8;

// The sum of (x[i] - center)^2 over n floats, accumulated in double over independent lanes.
double squares_about(const float *x, int64_t n, double center) {
  double sq = 0;
  vec::run_best([&]() LUMEN_VEC_INLINE {
    double lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const double c = x[i + l] - center;
        lanes[l] += c * c;
      }
    double s = 0;
    for (; i < n; ++i) s += (x[i] - center) * (x[i] - center);
    for (int l = 0; l < kLanes; ++l) s += lanes[l];
    sq = s;
  });
  return sq;
}

// Mean and centered sum of squares of n floats, accumulated in double over independent lanes.
void moments(const float *x, int64_t n, double &mean, double &squares) {
  double sum = 0;
  vec::run_best([&]() LUMEN_VEC_INLINE {
    double lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] += x[i + l];
    double s = 0;
    for (; i < n; ++i) s += x[i];
    for (int l = 0; l < kLanes; ++l) s += lanes[l];
    sum = s;
  });
  mean = n > 0 ? sum / double(n) : 0.0;
  squares = squares_about(x, n, mean);
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
  if (!fast) return run_reference_kernel(ctx);
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
      double mean = 0, sq = 0;
      moments(xr, d, mean, sq);
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

// rms_norm over the trailing dims from `axis`, scale one value per normalized position (any
// leading 1s): per row, the mean square in double lanes, then y = x * inv_rms * scale.
void rms_norm_f32(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &scale = ctx.input(1);
  const Shape &shape = tx.shape();
  const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  int64_t d = 1;
  for (size_t i = axis; i < shape.rank(); ++i) d *= shape[i];
  bool fast = scale.dtype() == DType::Float32 && scale.numel() == d && d > 0;
  for (size_t i = 0; fast && i < scale.rank(); ++i) {  // scale's dims are x's normalized dims
    const size_t from_end = scale.rank() - i;
    fast = from_end > shape.rank() - axis ? scale.shape()[i] == 1
                                          : scale.shape()[i] == shape[shape.rank() - from_end];
  }
  if (!fast) return run_reference_kernel(ctx);
  const int64_t rows = tx.numel() / d;
  const float *x = tx.data<float>(), *g = scale.data<float>();
  float *y = ctx.output(0).data<float>();
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 16384 / d), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *xr = x + r * d;
      float *yr = y + r * d;
      const float inv = float(1.0 / std::sqrt(squares_about(xr, d, 0.0) / double(d) + eps));
      vec::run_best([&]() LUMEN_VEC_INLINE {
        for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * inv * g[j];
      });
    }
  });
}

void channel_groups_norm_f32(KernelContext &ctx, int64_t groups, bool per_group_params) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  const bool fast = tx.dtype() == DType::Float32 && shape.rank() >= 2 && groups > 0 &&
                    shape[1] % groups == 0 && ctx.input(1).dtype() == DType::Float32 &&
                    ctx.input(2).dtype() == DType::Float32 &&
                    ctx.input(1).numel() == (per_group_params ? groups : shape[1]) &&
                    ctx.input(2).numel() == ctx.input(1).numel();
  if (!fast) return run_reference_kernel(ctx);
  const int64_t batch = shape[0], c = shape[1], per = c / groups;
  int64_t spatial = 1;
  for (size_t d = 2; d < shape.rank(); ++d) spatial *= shape[d];
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  const float *x = tx.data<float>(), *scale = ctx.input(1).data<float>();
  const float *bias = ctx.input(2).data<float>();
  float *y = ctx.output(0).data<float>();
  const int64_t count = per * spatial;
  ctx.pool.parallel_for(batch * groups, std::max<int64_t>(1, 16384 / std::max<int64_t>(count, 1)),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t item = begin; item < end; ++item) {
                            const int64_t g = item % groups;
                            const float *xi = x + item * count;
                            float *yi = y + item * count;
                            double mean = 0, squares = 0;
                            moments(xi, count, mean, squares);
                            const double var = count > 0 ? squares / double(count) : 0.0;
                            const float m = float(mean), inv = float(1.0 / std::sqrt(var + eps));
                            for (int64_t ch = 0; ch < per; ++ch) {
                              const int64_t p = per_group_params ? g : g * per + ch;
                              const float s = inv * scale[p], b = bias[p];
                              const float *xc = xi + ch * spatial;
                              float *yc = yi + ch * spatial;
                              vec::run_best([&]() LUMEN_VEC_INLINE {
                                for (int64_t i = 0; i < spatial; ++i) yc[i] = (xc[i] - m) * s + b;
                              });
                            }
                          }
                        });
}

void instance_norm_f32(KernelContext &ctx) {
  channel_groups_norm_f32(ctx, ctx.input(0).rank() >= 2 ? ctx.input(0).shape()[1] : 1, false);
}

void group_norm_f32(KernelContext &ctx) {
  channel_groups_norm_f32(ctx, ctx.attrs.get_int("num_groups", 1),
                          ctx.attrs.get_int("scale_per_group", 0) != 0);
}

LUMEN_REGISTER_KERNEL("cpu", "layer_norm", layer_norm_f32, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "rms_norm", rms_norm_f32, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "instance_norm", instance_norm_f32, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "group_norm", group_norm_f32, DType::Float32);

}  // namespace
}  // namespace lumen
