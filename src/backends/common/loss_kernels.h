// negative_log_likelihood_loss and softmax_cross_entropy_loss. The input is viewed as
// [N, C, D] (D = product of the dims after C, 1 for a 2-D input) and the target as [N, D].
// Each element's loss is -w[t] * x[n, t, d] (x = log_softmax over C for the cross entropy), with
// w = 1 without a weight input; a target equal to ignore_index contributes 0 to the loss and to
// the weight total. "mean" divides the sum by the weight total (by N * D when neither a weight
// nor an ignore_index is given, the same thing). Everything is computed in double and stored
// once. A target outside [0, C) that is not ignore_index is an error.
// Shared by the reference and CPU backends (the losses are small next to the models that end in
// them; training graphs are their only users).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen::loss_kernels {

template <class I>
inline std::vector<int64_t> read_targets(const Tensor &t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  const I *p = t.data<I>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = int64_t(p[i]);
  return out;
}

template <class T, bool kSoftmax>
void loss_typed(KernelContext &ctx) {
  const Tensor &xt = ctx.input(0);
  const Tensor &tt = ctx.input(1);
  const Shape &shape = xt.shape();
  const int64_t n = shape[0], c = shape[1];
  int64_t d = 1;
  for (size_t i = 2; i < shape.rank(); ++i) d *= shape[i];
  const T *x = xt.data<T>();
  const std::vector<int64_t> target =
      tt.dtype() == DType::Int32 ? read_targets<int32_t>(tt) : read_targets<int64_t>(tt);
  const T *weight = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  const bool has_ii = ctx.attrs.has("ignore_index");
  const int64_t ii = ctx.attrs.get_int("ignore_index", 0);
  const std::string reduction = ctx.attrs.get_string("reduction", "mean");

  // Scores used by the loss: x itself, or log_softmax(x) over C (also output 1).
  std::vector<double> scores(static_cast<size_t>(xt.numel()));
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = double(bin::load(x[i]));
  if constexpr (kSoftmax) {
    for (int64_t in = 0; in < n; ++in) {
      for (int64_t id = 0; id < d; ++id) {
        const int64_t base = in * c * d + id;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < c; ++k) mx = std::max(mx, scores[base + k * d]);
        double sum = 0;
        for (int64_t k = 0; k < c; ++k) sum += std::exp(scores[base + k * d] - mx);
        const double lse = mx + std::log(sum);
        for (int64_t k = 0; k < c; ++k) scores[base + k * d] -= lse;
      }
    }
    T *lp = ctx.output(1).data<T>();
    for (size_t i = 0; i < scores.size(); ++i) lp[i] = bin::convert<T>(scores[i]);
  }

  std::vector<double> losses(static_cast<size_t>(n * d));
  double total = 0, weight_total = 0;
  for (int64_t in = 0; in < n; ++in) {
    for (int64_t id = 0; id < d; ++id) {
      const int64_t t = target[in * d + id];
      double l = 0, w = 0;
      if (!(has_ii && t == ii)) {
        if (t < 0 || t >= c)
          ctx.fail("target value ", t, " at index ", in * d + id, " is out of range [0, ", c, ")",
                   has_ii ? " and is not ignore_index" : "");
        w = weight ? double(bin::load(weight[t])) : 1.0;
        l = -w * scores[(in * c + t) * d + id];
      }
      losses[in * d + id] = l;
      total += l;
      weight_total += w;
    }
  }
  T *y = ctx.output(0).data<T>();
  if (reduction == "none") {
    for (size_t i = 0; i < losses.size(); ++i) y[i] = bin::convert<T>(losses[i]);
  } else if (reduction == "sum") {
    y[0] = bin::convert<T>(total);
  } else {
    y[0] = bin::convert<T>(total / weight_total);
  }
}

template <bool kSoftmax>
void loss(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return loss_typed<float, kSoftmax>(ctx);
    case DType::Float64:
      return loss_typed<double, kSoftmax>(ctx);
    case DType::Float16:
      return loss_typed<Float16, kSoftmax>(ctx);
    case DType::BFloat16:
      return loss_typed<BFloat16, kSoftmax>(ctx);
    default:
      ctx.fail("no kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

}  // namespace lumen::loss_kernels
