// linear_attention and causal_conv_with_state: the ONNX recurrences step by step, in double, shared
// by the reference and CPU backends (the ops are new; no exporter writes them yet). Shapes were
// checked by inference.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen::linear_attention_kernels {

inline bool wants(const KernelContext &ctx, size_t i) {
  return ctx.outputs.size() > i && ctx.outputs[i];
}

inline void linear_attention(KernelContext &ctx) {
  const int64_t hq = ctx.attrs.get_int("q_num_heads", 1);
  const int64_t hkv = ctx.attrs.get_int("kv_num_heads", 1);
  const std::string rule = ctx.attrs.get_string("update_rule", "gated_delta");
  const bool gated = ctx.has_input(4), delta = ctx.has_input(5);
  const Shape &qs = ctx.input(0).shape();
  const int64_t nb = qs[0], nt = qs[1], dk = qs[2] / hq;
  const int64_t dv = ctx.input(2).shape()[2] / hkv, group = hq / hkv;
  // Inference checked these shapes; re-check what the loops index, in case dims were unknown.
  const auto expect = [&](size_t i, int64_t want, const char *what) {
    if (ctx.has_input(i) && ctx.input(i).numel() != want)
      ctx.fail(what, " ", ctx.input(i).shape().to_string(), " does not match query ",
               qs.to_string());
  };
  expect(1, nb * nt * hkv * dk, "key");
  expect(2, nb * nt * hkv * dv, "value");
  expect(3, nb * hkv * dk * dv, "past_state");
  if (gated && ctx.input(4).shape()[2] != hkv) expect(4, nb * nt * hkv * dk, "decay");
  if (gated && ctx.input(4).shape()[2] == hkv) expect(4, nb * nt * hkv, "decay");
  if (delta) expect(5, nb * nt * ctx.input(5).shape()[2], "beta");
  if (delta && ctx.input(5).shape()[2] != 1 && ctx.input(5).shape()[2] != hkv)
    ctx.fail("beta last dim must be kv_num_heads or 1, got ", ctx.input(5).shape().to_string());
  const std::vector<double> q = to_f64(ctx, ctx.input(0)), k = to_f64(ctx, ctx.input(1)),
                            v = to_f64(ctx, ctx.input(2));
  std::vector<double> state(static_cast<size_t>(nb * hkv * dk * dv), 0.0);
  if (ctx.has_input(3)) state = to_f64(ctx, ctx.input(3));
  std::vector<double> decay, beta;
  int64_t decay_last = 0, beta_last = 0;
  if (gated) {
    decay = to_f64(ctx, ctx.input(4));
    decay_last = ctx.input(4).shape()[2];
  }
  if (delta) {
    beta = to_f64(ctx, ctx.input(5));
    beta_last = ctx.input(5).shape()[2];
  }
  double scale = ctx.attrs.get_float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(dk));
  std::vector<double> y(static_cast<size_t>(nb * nt * hq * dv), 0.0);
  std::vector<double> vt(static_cast<size_t>(dv));
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t row = b * nt + t;
      for (int64_t h = 0; h < hkv; ++h) {
        double *s = &state[static_cast<size_t>(((b * hkv + h) * dk) * dv)];
        const double *kt = &k[static_cast<size_t>((row * hkv + h) * dk)];
        for (int64_t m = 0; m < dv; ++m) vt[m] = v[static_cast<size_t>((row * hkv + h) * dv + m)];
        if (gated)
          for (int64_t d = 0; d < dk; ++d) {
            const int64_t gi = decay_last == hkv ? row * hkv + h : (row * hkv + h) * dk + d;
            const double g = std::exp(decay[static_cast<size_t>(gi)]);
            for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= g;
          }
        if (delta) {
          const double bt = beta[static_cast<size_t>(row * beta_last + (beta_last == 1 ? 0 : h))];
          for (int64_t m = 0; m < dv; ++m) {
            double r = 0;
            for (int64_t d = 0; d < dk; ++d) r += s[d * dv + m] * kt[d];
            vt[m] = bt * (vt[m] - r);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) s[d * dv + m] += kt[d] * vt[m];
        for (int64_t g = 0; g < group; ++g) {
          const int64_t qh = h * group + g;
          const double *qt = &q[static_cast<size_t>((row * hq + qh) * dk)];
          for (int64_t m = 0; m < dv; ++m) {
            double acc = 0;
            for (int64_t d = 0; d < dk; ++d) acc += qt[d] * s[d * dv + m];
            y[static_cast<size_t>((row * hq + qh) * dv + m)] = scale * acc;
          }
        }
      }
    }
  (void)rule;
  from_f64(ctx, ctx.output(0), y);
  if (wants(ctx, 1)) from_f64(ctx, ctx.output(1), state);
}

inline void causal_conv_with_state(KernelContext &ctx) {
  const Shape &xs = ctx.input(0).shape();
  const int64_t nb = xs[0], nc = xs[1], nl = xs[2], kk = ctx.input(1).shape()[2];
  const int64_t sk = kk - 1, padded_len = nl + sk;
  if (kk < 1 || ctx.input(1).numel() != nc * kk ||
      (ctx.has_input(2) && ctx.input(2).numel() != nc) ||
      (ctx.has_input(3) && ctx.input(3).numel() != nb * nc * sk))
    ctx.fail("weight ", ctx.input(1).shape().to_string(),
             ", bias or past_state do not match input ", xs.to_string());
  const std::vector<double> x = to_f64(ctx, ctx.input(0)), w = to_f64(ctx, ctx.input(1));
  std::vector<double> bias(static_cast<size_t>(nc), 0.0), past;
  if (ctx.has_input(2)) bias = to_f64(ctx, ctx.input(2));
  if (ctx.has_input(3)) past = to_f64(ctx, ctx.input(3));
  std::vector<double> padded(static_cast<size_t>(nb * nc * padded_len), 0.0);
  for (int64_t bc = 0; bc < nb * nc; ++bc) {
    double *p = &padded[static_cast<size_t>(bc * padded_len)];
    if (!past.empty())
      for (int64_t i = 0; i < sk; ++i) p[i] = past[static_cast<size_t>(bc * sk + i)];
    for (int64_t i = 0; i < nl; ++i) p[sk + i] = x[static_cast<size_t>(bc * nl + i)];
  }
  std::vector<double> y(static_cast<size_t>(nb * nc * nl)),
      state(static_cast<size_t>(nb * nc * sk));
  for (int64_t bc = 0; bc < nb * nc; ++bc) {
    const int64_t c = bc % nc;
    const double *p = &padded[static_cast<size_t>(bc * padded_len)];
    for (int64_t i = 0; i < nl; ++i) {
      double acc = bias[static_cast<size_t>(c)];
      for (int64_t j = 0; j < kk; ++j) acc += p[i + j] * w[static_cast<size_t>(c * kk + j)];
      y[static_cast<size_t>(bc * nl + i)] = acc;
    }
    for (int64_t i = 0; i < sk; ++i) state[static_cast<size_t>(bc * sk + i)] = p[nl + i];
  }
  from_f64(ctx, ctx.output(0), y);
  const std::string act = ctx.attrs.get_string("activation", "none");
  if (act == "silu" || act == "swish") {
    // ONNX rounds the convolution to the input dtype before the activation.
    std::vector<double> r = to_f64(ctx, ctx.output(0));
    for (double &e : r) e = e / (1.0 + std::exp(-e));
    from_f64(ctx, ctx.output(0), r);
  }
  if (wants(ctx, 1)) from_f64(ctx, ctx.output(1), state);
}

}  // namespace lumen::linear_attention_kernels
