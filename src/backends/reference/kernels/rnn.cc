// Reference RNN / GRU / LSTM: the ONNX equations, one time step, batch row and hidden unit at a
// time, accumulated in double. Steps past a batch row's sequence length write zeros to Y and
// leave its state unchanged; the reverse direction runs over each row's valid steps backwards.
#include <algorithm>
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "backends/common/recurrent_activations.h"
#include "backends/common/recurrent_shape.h"
#include "core/kernel.h"

namespace lumen {
namespace {

template <class T>
void recurrent(KernelContext &ctx) {
  const std::string op(ctx.op);
  const RecurrentShape shape = recurrent_shape(ctx);
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1), &tr = ctx.input(2);
  const int64_t g = shape.gates, dirs = shape.dirs, seq = shape.seq, batch = shape.batch;
  const int64_t in = shape.input, h = shape.hidden;
  const bool layout1 = shape.layout1;
  const bool has_clip = ctx.attrs.has("clip");
  const double clip = ctx.attrs.get_float("clip", 0.0);
  if (has_clip && !(clip > 0)) ctx.fail("clip must be positive, got ", clip);
  const bool lbr = ctx.attrs.get_int("linear_before_reset", 0) != 0;
  // LSTM's input_forget couples the input and forget gates: f = 1 - i.
  const bool input_forget = g == 4 && ctx.attrs.get_int("input_forget", 0) != 0;
  const std::vector<std::string> &defaults = shape.default_activations;
  const auto acts = recurrent_activations(ctx, dirs, defaults);
  const size_t per_dir = defaults.size();

  const T *x = tx.data<T>(), *w = tw.data<T>(), *r = tr.data<T>();
  const T *b = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
  const std::vector<int64_t> lens = sequence_lengths(ctx, shape);
  const T *h0 = ctx.has_input(5) ? ctx.input(5).data<T>() : nullptr;
  const T *c0 = op == "lstm" && ctx.has_input(6) ? ctx.input(6).data<T>() : nullptr;
  const T *p = op == "lstm" && ctx.has_input(7) ? ctx.input(7).data<T>() : nullptr;
  T *y = ctx.output(0).data<T>();
  T *yh = ctx.output(1).data<T>();
  T *yc = op == "lstm" ? ctx.output(2).data<T>() : nullptr;

  auto x_at = [&](int64_t t, int64_t n, int64_t k) {
    return double(x[(layout1 ? n * seq + t : t * batch + n) * in + k]);
  };
  auto state_index = [&](int64_t d, int64_t n, int64_t j) {
    return (layout1 ? n * dirs + d : d * batch + n) * h + j;
  };
  auto y_index = [&](int64_t t, int64_t d, int64_t n, int64_t j) {
    return (layout1 ? (n * seq + t) * dirs + d : (t * dirs + d) * batch + n) * h + j;
  };
  auto clipped = [&](double v) { return has_clip ? std::clamp(v, -clip, clip) : v; };
  std::fill(y, y + ctx.output(0).numel(), T(0));

  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = shape.backwards(d);
    const RecurrentActivation &f = acts[static_cast<size_t>(d) * per_dir];
    const RecurrentActivation &gact = per_dir > 1 ? acts[static_cast<size_t>(d) * per_dir + 1] : f;
    const RecurrentActivation &hact = per_dir > 2 ? acts[static_cast<size_t>(d) * per_dir + 2] : f;
    const T *wd = w + d * g * h * in, *rd = r + d * g * h * h;
    const T *bd = b ? b + d * 2 * g * h : nullptr;
    const T *pd = p ? p + d * 3 * h : nullptr;
    for (int64_t n = 0; n < batch; ++n) {
      std::vector<double> hs(static_cast<size_t>(h)), cs(static_cast<size_t>(h), 0.0);
      for (int64_t j = 0; j < h; ++j) {
        hs[size_t(j)] = h0 ? double(h0[state_index(d, n, j)]) : 0.0;
        if (c0) cs[size_t(j)] = double(c0[state_index(d, n, j)]);
      }
      const int64_t len = lens[size_t(n)];
      // xw[gate*h + j] = X_t W^T + Wb ; hr[gate*h + j] = H_{t-1} R^T + Rb
      const size_t gh = static_cast<size_t>(g * h), hn = static_cast<size_t>(h);
      std::vector<double> xw(gh), hr(gh), next(hn), nc(hn);
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        for (int64_t q = 0; q < g * h; ++q) {
          double a = bd ? double(bd[q]) : 0.0, c = bd ? double(bd[g * h + q]) : 0.0;
          for (int64_t k = 0; k < in; ++k) a += x_at(t, n, k) * double(wd[q * in + k]);
          for (int64_t k = 0; k < h; ++k) c += hs[size_t(k)] * double(rd[q * h + k]);
          xw[size_t(q)] = a;
          hr[size_t(q)] = c;
        }
        for (int64_t j = 0; j < h; ++j) {
          const size_t J = size_t(j), H = size_t(h);
          if (g == 1) {
            next[J] = f(clipped(xw[J] + hr[J]));
          } else if (g == 3) {  // gates z, r, h
            const double z = f(clipped(xw[J] + hr[J]));
            const double rg = f(clipped(xw[H + J] + hr[H + J]));
            double pre;
            if (lbr) {
              pre = xw[2 * H + J] + rg * hr[2 * H + J];
            } else {
              // (r . H_{t-1}) R_h^T + Rb_h
              double acc = bd ? double(bd[g * h + 2 * h + j]) : 0.0;
              for (int64_t k = 0; k < h; ++k)
                acc += f(clipped(xw[H + size_t(k)] + hr[H + size_t(k)])) * hs[size_t(k)] *
                       double(rd[(2 * h + j) * h + k]);
              pre = xw[2 * H + J] + acc;
            }
            const double hh = gact(clipped(pre));
            next[J] = (1.0 - z) * hh + z * hs[J];
          } else {  // gates i, o, f, c; P = [Pi, Po, Pf]
            const double cprev = cs[J];
            const double ig = f(clipped(xw[J] + hr[J] + (pd ? double(pd[j]) * cprev : 0.0)));
            const double fg = input_forget ? 1.0 - ig
                                           : f(clipped(xw[2 * H + J] + hr[2 * H + J] +
                                                       (pd ? double(pd[2 * h + j]) * cprev : 0.0)));
            const double cg = gact(clipped(xw[3 * H + J] + hr[3 * H + J]));
            const double c = fg * cprev + ig * cg;
            const double og =
                f(clipped(xw[H + J] + hr[H + J] + (pd ? double(pd[h + j]) * c : 0.0)));
            nc[J] = c;
            next[J] = og * hact(c);
          }
        }
        hs = next;
        if (g == 4) cs = nc;
        for (int64_t j = 0; j < h; ++j) y[y_index(t, d, n, j)] = T(hs[size_t(j)]);
      }
      for (int64_t j = 0; j < h; ++j) {
        yh[state_index(d, n, j)] = T(hs[size_t(j)]);
        if (yc) yc[state_index(d, n, j)] = T(cs[size_t(j)]);
      }
    }
  }
}

LUMEN_REGISTER_KERNEL("reference", "rnn", recurrent<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "rnn", recurrent<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "gru", recurrent<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "gru", recurrent<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "lstm", recurrent<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "lstm", recurrent<double>, DType::Float64);

}  // namespace
}  // namespace lumen
