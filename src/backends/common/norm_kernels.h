// layer_norm, rms_norm, instance_norm, group_norm, batch_norm_training, lp_norm and
// mean_variance_norm: the
// ONNX formulas in double. Every op maps each element to a statistics group (the index of the
// element with the normalized dims removed), accumulates per group, then normalizes. Parameters
// that broadcast to x are expanded to x's shape first. Shapes were checked by inference.
// Shared by the reference backend and, for the dtypes its own kernels leave out (float64, and
// batch_norm_training in every float type), the CPU backend.
#pragma once

#include <cmath>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen::norm_kernels {

// `p` (broadcastable to `shape`) expanded to shape's element count.
inline std::vector<double> expand_to(const KernelContext &ctx, const Tensor &p,
                                     const Shape &shape) {
  const std::vector<double> v = to_f64(ctx, p);
  const size_t rank = shape.rank(), off = rank - p.shape().rank();
  std::vector<double> out(static_cast<size_t>(shape.numel()));
  std::vector<int64_t> idx(rank, 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = off; d < rank; ++d) {
      const int64_t pd = p.shape()[d - off];
      src = src * pd + (pd == 1 ? 0 : idx[d]);
    }
    out[flat] = v[static_cast<size_t>(src)];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Group index of every element when the dims with reduced[d] are reduced; also the group count.
inline std::vector<int64_t> groups_of(const Shape &shape, const std::vector<bool> &reduced,
                                      int64_t &num_groups) {
  const size_t rank = shape.rank();
  std::vector<int64_t> out(static_cast<size_t>(shape.numel()));
  std::vector<int64_t> idx(rank, 0);
  num_groups = 1;
  for (size_t d = 0; d < rank; ++d)
    if (!reduced[d]) num_groups *= shape[d];
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t g = 0;
    for (size_t d = 0; d < rank; ++d)
      if (!reduced[d]) g = g * shape[d] + idx[d];
    out[flat] = g;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Per-group mean and mean of squares.
inline void moments(const std::vector<double> &x, const std::vector<int64_t> &group, int64_t n,
                    std::vector<double> &mean, std::vector<double> &sq_mean) {
  mean.assign(static_cast<size_t>(n), 0.0);
  sq_mean.assign(static_cast<size_t>(n), 0.0);
  std::vector<double> count(static_cast<size_t>(n), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    mean[group[i]] += x[i];
    count[group[i]] += 1;
  }
  for (int64_t g = 0; g < n; ++g)
    if (count[g] > 0) mean[g] /= count[g];
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - mean[group[i]];
    sq_mean[group[i]] += d * d;  // centered: the variance
  }
  for (int64_t g = 0; g < n; ++g)
    if (count[g] > 0) sq_mean[g] /= count[g];
}

inline void layer_norm(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  std::vector<bool> reduced(shape.rank());
  for (size_t d = axis; d < shape.rank(); ++d) reduced[d] = true;
  int64_t n = 0;
  const std::vector<int64_t> group = groups_of(shape, reduced, n);
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> mean, var;
  moments(x, group, n, mean, var);
  const std::vector<double> scale = expand_to(ctx, ctx.input(1), shape);
  std::vector<double> bias;
  if (ctx.has_input(2)) bias = expand_to(ctx, ctx.input(2), shape);
  std::vector<double> inv(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) inv[g] = 1.0 / std::sqrt(var[g] + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = (x[i] - mean[group[i]]) * inv[group[i]] * scale[i] + (bias.empty() ? 0.0 : bias[i]);
  from_f64(ctx, ctx.output(0), y);
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) from_f64(ctx, ctx.output(1), mean);
  if (ctx.outputs.size() > 2 && ctx.outputs[2]) from_f64(ctx, ctx.output(2), inv);
}

inline void rms_norm(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  std::vector<bool> reduced(shape.rank());
  for (size_t d = axis; d < shape.rank(); ++d) reduced[d] = true;
  int64_t n = 0;
  const std::vector<int64_t> group = groups_of(shape, reduced, n);
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> ms(static_cast<size_t>(n), 0.0), count(static_cast<size_t>(n), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    ms[group[i]] += x[i] * x[i];
    count[group[i]] += 1;
  }
  for (int64_t g = 0; g < n; ++g) ms[g] = 1.0 / std::sqrt(ms[g] / count[g] + eps);
  const std::vector<double> scale = expand_to(ctx, ctx.input(1), shape);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * ms[group[i]] * scale[i];
  from_f64(ctx, ctx.output(0), y);
}

// instance_norm and group_norm: statistics per (n, group of channels).
inline void channel_groups_norm(KernelContext &ctx, int64_t groups, bool per_group_params) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  const int64_t batch = shape[0], c = shape[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < shape.rank(); ++d) spatial *= shape[d];
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  const std::vector<double> x = to_f64(ctx, tx);
  const std::vector<double> scale = to_f64(ctx, ctx.input(1)), bias = to_f64(ctx, ctx.input(2));
  const int64_t per = c / groups;
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = (b * c + g * per) * spatial, count = per * spatial;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < count; ++i) mean += x[begin + i];
      if (count > 0) mean /= double(count);
      for (int64_t i = 0; i < count; ++i) var += (x[begin + i] - mean) * (x[begin + i] - mean);
      if (count > 0) var /= double(count);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t ch = 0; ch < per; ++ch) {
        const int64_t p = per_group_params ? g : g * per + ch;
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = begin + ch * spatial + s;
          y[i] = (x[i] - mean) * inv * scale[p] + bias[p];
        }
      }
    }
  from_f64(ctx, ctx.output(0), y);
}

inline void instance_norm(KernelContext &ctx) {
  channel_groups_norm(ctx, ctx.input(0).shape()[1], false);
}

inline void group_norm(KernelContext &ctx) {
  channel_groups_norm(ctx, ctx.attrs.get_int("num_groups", 1),
                      ctx.attrs.get_int("scale_per_group", 0) != 0);
}

inline void batch_norm_training(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  std::vector<bool> reduced(shape.rank(), true);
  reduced[1] = false;
  int64_t n = 0;
  const std::vector<int64_t> group = groups_of(shape, reduced, n);
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> mean, var;
  moments(x, group, n, mean, var);
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  const double momentum = ctx.attrs.get_float("momentum", 0.9);
  const std::vector<double> scale = to_f64(ctx, ctx.input(1)), bias = to_f64(ctx, ctx.input(2));
  const std::vector<double> in_mean = to_f64(ctx, ctx.input(3)), in_var = to_f64(ctx, ctx.input(4));
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = group[i];
    y[i] = scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + eps) + bias[c];
  }
  std::vector<double> run_mean(static_cast<size_t>(n)), run_var(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    run_mean[c] = in_mean[c] * momentum + mean[c] * (1 - momentum);
    run_var[c] = in_var[c] * momentum + var[c] * (1 - momentum);
  }
  from_f64(ctx, ctx.output(0), y);
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) from_f64(ctx, ctx.output(1), run_mean);
  if (ctx.outputs.size() > 2 && ctx.outputs[2]) from_f64(ctx, ctx.output(2), run_var);
}

inline void lp_norm(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
  const int64_t p = ctx.attrs.get_int("p", 2);
  std::vector<bool> reduced(shape.rank());
  reduced[axis] = true;
  int64_t n = 0;
  const std::vector<int64_t> group = groups_of(shape, reduced, n);
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> norm(static_cast<size_t>(n), 0.0);
  for (size_t i = 0; i < x.size(); ++i) norm[group[i]] += p == 1 ? std::abs(x[i]) : x[i] * x[i];
  if (p == 2)
    for (double &v : norm) v = std::sqrt(v);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = norm[group[i]] == 0 ? 0.0 : x[i] / norm[group[i]];
  from_f64(ctx, ctx.output(0), y);
}

inline void mean_variance_norm(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &shape = tx.shape();
  std::vector<bool> reduced(shape.rank());
  for (int64_t a : ctx.attrs.get_ints("axes", {0, 2, 3})) reduced[shape.normalize_axis(a)] = true;
  int64_t n = 0;
  const std::vector<int64_t> group = groups_of(shape, reduced, n);
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> mean, var;
  moments(x, group, n, mean, var);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = (x[i] - mean[group[i]]) / (std::sqrt(var[group[i]]) + 1e-9);
  from_f64(ctx, ctx.output(0), y);
}

}  // namespace lumen::norm_kernels
