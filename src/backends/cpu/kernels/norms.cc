// CPU layer_norm for float32, normalized over the dims from `axis` on, scale and bias (optional)
// broadcast against the input (one row of parameters in the usual case of one value per
// normalized position). Rows run in parallel on the runtime's pool; each row is two passes (mean,
// then centered variance, in double for accuracy) and a fused normalize-scale-shift pass.
//
// rms_norm for float32 the same way, over the trailing dims.
//
// And instance_norm / group_norm for float32: the same two passes per (image, group of
// channels), in double lanes the compiler can vectorize, items in parallel, then each channel
// normalized with its scale and bias (or its group's, with scale_per_group).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// A scale or bias broadcast against x (right-aligned, as inference checked) for rows of the
// `d` values x holds from dim `axis` on: one row of d values where it varies only along those
// dims (the common case: [d], [1, d], a per-position scale), else one row per row of x.
struct RowParams {
  std::vector<float> values;
  int64_t row_stride = 0;  // 0 or d
  const float *row(int64_t r) const { return values.data() + r * row_stride; }
};

RowParams row_params(const KernelContext &ctx, const Tensor &p, const Shape &x, size_t axis,
                     int64_t d) {
  if (p.dtype() != DType::Float32)
    ctx.fail("scale and bias must be float32 like the input, got ", dtype_name(p.dtype()));
  const Shape &ps = p.shape();
  if (ps.rank() > x.rank()) ctx.fail("parameter ", ps.to_string(), " outranks ", x.to_string());
  const size_t off = x.rank() - ps.rank();
  bool per_row = false;
  for (size_t i = 0; i < ps.rank(); ++i) {
    if (ps[i] != 1 && ps[i] != x[off + i])
      ctx.fail("parameter ", ps.to_string(), " does not broadcast to ", x.to_string());
    per_row = per_row || (off + i < axis && ps[i] != 1);
  }
  // The broadcast, element by element over the dims it covers (from `first` on).
  const size_t first = per_row ? 0 : axis;
  int64_t count = 1;
  for (size_t k = first; k < x.rank(); ++k) count *= x[k];
  RowParams out;
  out.values.resize(static_cast<size_t>(count));
  out.row_stride = per_row ? d : 0;
  const float *src = p.data<float>();
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, at = 0, stride = 1;
    for (size_t k = x.rank(); k-- > first;) {
      const int64_t idx = rest % x[k];
      rest /= x[k];
      if (k >= off) {
        if (ps[k - off] != 1) at += idx * stride;
        stride *= ps[k - off];
      }
    }
    out.values[static_cast<size_t>(i)] = src[at];
  }
  return out;
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
  int64_t d = 1;  // the normalized values per row: every dim from axis on
  for (size_t i = axis; i < shape.rank(); ++i) d *= shape[i];
  if (ctx.output(1).dtype() != DType::Float32 || ctx.output(2).dtype() != DType::Float32)
    ctx.fail("mean and inv_std_dev must be float32 (stash_type 1) for a float32 input");
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  if (d == 0) {  // rows of nothing: mean 0 and variance 0, as the moments of no values
    std::fill_n(ctx.output(1).data<float>(), ctx.output(1).numel(), 0.0f);
    std::fill_n(ctx.output(2).data<float>(), ctx.output(2).numel(), float(1.0 / std::sqrt(eps)));
  }
  if (tx.numel() == 0) return;
  const RowParams scale_rows = row_params(ctx, ctx.input(1), shape, axis, d);
  const RowParams bias_rows =
      ctx.has_input(2) ? row_params(ctx, ctx.input(2), shape, axis, d) : RowParams{};
  const int64_t rows = tx.numel() / d;
  const float *x = tx.data<float>();
  float *y = ctx.output(0).data<float>();
  float *mean_out = ctx.output(1).data<float>();
  float *inv_out = ctx.output(2).data<float>();
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 16384 / d), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *xr = x + r * d;
      float *yr = y + r * d;
      double mean = 0, sq = 0;
      moments(xr, d, mean, sq);
      const double inv = 1.0 / std::sqrt(sq / double(d) + eps);
      const float m = float(mean), s = float(inv);
      const float *scale = scale_rows.row(r);
      const float *bias = ctx.has_input(2) ? bias_rows.row(r) : nullptr;
      if (bias)
        for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * scale[i] + bias[i];
      else
        for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * scale[i];
      mean_out[r] = m;
      inv_out[r] = s;
    }
  });
}

// rms_norm over the trailing dims from `axis`, scale broadcast against x: per row, the mean
// square in double lanes, then y = x * inv_rms * scale.
void rms_norm_f32(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &scale = ctx.input(1);
  const Shape &shape = tx.shape();
  const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  int64_t d = 1;
  for (size_t i = axis; i < shape.rank(); ++i) d *= shape[i];
  if (tx.numel() == 0) return;
  const RowParams g_rows = row_params(ctx, scale, shape, axis, d);
  const int64_t rows = tx.numel() / d;
  const float *x = tx.data<float>();
  float *y = ctx.output(0).data<float>();
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 16384 / d), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *xr = x + r * d;
      float *yr = y + r * d;
      const float inv = float(1.0 / std::sqrt(squares_about(xr, d, 0.0) / double(d) + eps));
      const float *g = g_rows.row(r);
      vec::run_best([&]() LUMEN_VEC_INLINE {
        for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * inv * g[j];
      });
    }
  });
}

void channel_groups_norm_f32(KernelContext &ctx, int64_t groups, bool per_group_params) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  if (shape.rank() < 2 || groups <= 0 || shape[1] % groups != 0)
    ctx.fail("input ", shape.to_string(), " does not split into ", groups, " groups of channels");
  const int64_t params = per_group_params ? groups : shape[1];
  for (size_t i = 1; i <= 2; ++i)
    if (ctx.input(i).dtype() != DType::Float32 || ctx.input(i).numel() != params)
      ctx.fail(i == 1 ? "scale" : "bias", " must hold ", params, " float32 values, got ",
               ctx.input(i).to_string());
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
