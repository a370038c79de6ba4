// CPU rnn, gru and lstm (float32), ONNX semantics: both directions, layouts 0 and 1, biases,
// initial states, sequence_lens, peepholes, GRU's linear_before_reset. The input projection of all
// time steps is one packed GEMM (X W^T + biases); each step is one GEMM of the batch's hidden
// states with R^T (GRU without linear_before_reset: a second one over r * H for the candidate),
// then the gates element-wise: ONNX's default activations inline, or the node's activations, clip
// and LSTM's input_forget (f = 1 - i).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/common/recurrent_activations.h"
#include "backends/common/recurrent_shape.h"
#include "backends/cpu/gemm/sgemm.h"
#include "core/kernel.h"

namespace lumen {
namespace {

float sigmoid(float v) {
  return 1.f / (1.f + std::exp(-v));
}

// The gate functions as the loops call them: ONNX's defaults inline (sigmoid, tanh, no clip), or
// the node's activations and clip.
struct DefaultGates {
  bool f_is_tanh;  // RNN's one activation is tanh; GRU's and LSTM's first is sigmoid
  float f(float v) const { return f_is_tanh ? std::tanh(v) : sigmoid(v); }
  float g(float v) const { return std::tanh(v); }
  float h(float v) const { return std::tanh(v); }
  float clip(float v) const { return v; }
};
struct NodeGates {
  RecurrentActivation fa, ga, ha;
  bool has_clip;
  float bound;
  float f(float v) const { return fa(v); }
  float g(float v) const { return ga(v); }
  float h(float v) const { return ha(v); }
  float clip(float v) const { return has_clip ? std::clamp(v, -bound, bound) : v; }
};

void recurrent(KernelContext &ctx) {
  const RecurrentShape s = recurrent_shape(ctx);
  const std::vector<RecurrentActivation> acts =
      recurrent_activations(ctx, s.dirs, s.default_activations);
  const size_t per_dir = s.default_activations.size();
  const bool has_clip = ctx.attrs.has("clip");
  const double clip = ctx.attrs.get_float("clip", 0.0);
  if (has_clip && !(clip > 0)) ctx.fail("clip must be positive, got ", clip);
  // LSTM's input_forget couples the gates: f = 1 - i.
  const bool input_forget = s.gates == 4 && ctx.attrs.get_int("input_forget", 0) != 0;
  bool defaults =
      !has_clip && !ctx.attrs.has("activation_alpha") && !ctx.attrs.has("activation_beta");
  for (size_t i = 0; i < acts.size(); ++i) {
    RecurrentActivation want;
    bool ua = false, ub = false;
    recurrent_activation_kind(s.default_activations[i % per_dir], want, ua, ub);
    defaults = defaults && acts[i].kind == want.kind;
  }
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1), &tr = ctx.input(2);
  const int64_t g = s.gates, dirs = s.dirs, seq = s.seq, batch = s.batch, in = s.input;
  const int64_t h = s.hidden, gh = g * h;
  const bool layout1 = s.layout1;
  const bool lbr = ctx.attrs.get_int("linear_before_reset", 0) != 0;
  const std::vector<int64_t> lens = sequence_lengths(ctx, s);
  const float *x = tx.data<float>(), *w = tw.data<float>(), *r = tr.data<float>();
  const float *b = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  const float *h0 = ctx.has_input(5) ? ctx.input(5).data<float>() : nullptr;
  const float *c0 = g == 4 && ctx.has_input(6) ? ctx.input(6).data<float>() : nullptr;
  const float *p = g == 4 && ctx.has_input(7) ? ctx.input(7).data<float>() : nullptr;
  float *y = ctx.output(0).data<float>();
  float *yh = ctx.output(1).data<float>();
  float *yc = g == 4 ? ctx.output(2).data<float>() : nullptr;
  std::fill(y, y + ctx.output(0).numel(), 0.f);
  auto state_index = [&](int64_t d, int64_t n) {
    return (layout1 ? n * dirs + d : d * batch + n) * h;
  };
  auto y_index = [&](int64_t t, int64_t d, int64_t n) {
    return (layout1 ? (n * seq + t) * dirs + d : (t * dirs + d) * batch + n) * h;
  };
  // X's rows in memory order: t * batch + n (layout 0) or n * seq + t (layout 1).
  auto x_row = [&](int64_t t, int64_t n) { return layout1 ? n * seq + t : t * batch + n; };

  std::vector<float> xw(size_t(seq * batch * gh)), hr(size_t(batch * gh));
  std::vector<float> hs(size_t(batch * h)), cs(size_t(batch * h)), rh(size_t(batch * h));
  std::vector<float> cand(size_t(batch * h));
  const auto direction = [&](int64_t d, const auto &gate) {
    const bool reverse = s.backwards(d);
    const float *wd = w + d * gh * in, *rd = r + d * gh * h;
    const float *bd = b ? b + d * 2 * gh : nullptr, *pd = p ? p + d * 3 * h : nullptr;
    // X W^T for every step, plus Wb + Rb (GRU's candidate gets Rb_h later, next to R_h).
    cpu::sgemm(ctx.pool, seq * batch, gh, in, cpu::StridedA(x, in, false),
               cpu::StridedB(wd, in, true), xw.data(), gh);
    if (bd)
      for (int64_t row = 0; row < seq * batch; ++row)
        for (int64_t q = 0; q < gh; ++q)
          xw[size_t(row * gh + q)] += bd[q] + (g == 3 && q >= 2 * h ? 0.f : bd[gh + q]);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t j = 0; j < h; ++j) {
        hs[size_t(n * h + j)] = h0 ? h0[state_index(d, n) + j] : 0.f;
        cs[size_t(n * h + j)] = c0 ? c0[state_index(d, n) + j] : 0.f;
      }
    const int64_t steps = *std::max_element(lens.begin(), lens.end());
    for (int64_t s = 0; s < steps; ++s) {
      // H_{t-1} R^T for the whole batch (rows past their length are computed and ignored).
      cpu::sgemm(ctx.pool, batch, gh, h, cpu::StridedA(hs.data(), h, false),
                 cpu::StridedB(rd, h, true), hr.data(), gh);
      if (g == 3 && !lbr) {
        // The candidate reads (r * H_{t-1}) R_h^T: r first, then its own GEMM.
        for (int64_t n = 0; n < batch; ++n) {
          const int64_t t = reverse ? lens[size_t(n)] - 1 - s : s;
          const float *a = xw.data() + (t >= 0 ? x_row(t, n) : 0) * gh;
          for (int64_t j = 0; j < h; ++j)
            rh[size_t(n * h + j)] =
                gate.f(gate.clip(a[h + j] + hr[size_t(n * gh + h + j)])) * hs[size_t(n * h + j)];
        }
        cpu::sgemm(ctx.pool, batch, h, h, cpu::StridedA(rh.data(), h, false),
                   cpu::StridedB(rd + 2 * h * h, h, true), cand.data(), h);
      }
      for (int64_t n = 0; n < batch; ++n) {
        if (s >= lens[size_t(n)]) continue;  // this row has ended: its state stays
        const int64_t t = reverse ? lens[size_t(n)] - 1 - s : s;
        const float *a = xw.data() + x_row(t, n) * gh, *c = hr.data() + n * gh;
        float *hn = hs.data() + n * h, *cn = cs.data() + n * h;
        for (int64_t j = 0; j < h; ++j) {
          if (g == 1) {
            hn[j] = gate.f(gate.clip(a[j] + c[j]));
          } else if (g == 3) {
            const float z = gate.f(gate.clip(a[j] + c[j]));
            const float rb = bd ? bd[gh + 2 * h + j] : 0.f;
            const float pre =
                lbr ? a[2 * h + j] + gate.f(gate.clip(a[h + j] + c[h + j])) * (c[2 * h + j] + rb)
                    : a[2 * h + j] + cand[size_t(n * h + j)] + rb;
            hn[j] = (1.f - z) * gate.g(gate.clip(pre)) + z * hn[j];
          } else {  // gates i, o, f, c; P = [Pi, Po, Pf]
            const float cprev = cn[j];
            const float ig = gate.f(gate.clip(a[j] + c[j] + (pd ? pd[j] * cprev : 0.f)));
            const float fg = input_forget ? 1.f - ig
                                          : gate.f(gate.clip(a[2 * h + j] + c[2 * h + j] +
                                                             (pd ? pd[2 * h + j] * cprev : 0.f)));
            const float cg = gate.g(gate.clip(a[3 * h + j] + c[3 * h + j]));
            const float cell = fg * cprev + ig * cg;
            const float og = gate.f(gate.clip(a[h + j] + c[h + j] + (pd ? pd[h + j] * cell : 0.f)));
            cn[j] = cell;
            hn[j] = og * gate.h(cell);
          }
        }
        std::copy_n(hn, h, y + y_index(t, d, n));
      }
    }
    for (int64_t n = 0; n < batch; ++n) {
      std::copy_n(hs.data() + n * h, h, yh + state_index(d, n));
      if (yc) std::copy_n(cs.data() + n * h, h, yc + state_index(d, n));
    }
  };
  for (int64_t d = 0; d < dirs; ++d) {
    if (defaults && !input_forget) {
      direction(d, DefaultGates{g == 1});
    } else {
      const size_t at = size_t(d) * per_dir;
      const RecurrentActivation &fa = acts[at];
      direction(d, NodeGates{fa, per_dir > 1 ? acts[at + 1] : fa, per_dir > 2 ? acts[at + 2] : fa,
                             has_clip, float(clip)});
    }
  }
}

LUMEN_REGISTER_KERNEL("cpu", "rnn", recurrent, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "gru", recurrent, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "lstm", recurrent, DType::Float32);

}  // namespace
}  // namespace lumen
