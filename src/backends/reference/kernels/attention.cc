// Reference attention: the ONNX Attention formula one query row at a time, in double, rounding
// to the input dtype where ONNX's definition materializes a tensor of that type (the scaled Q and
// K, the QK product, the softcap, the biased logits, the probabilities and Y), so float16 and
// bfloat16 results follow the spec closely. Shapes were checked by inference.
#include <cmath>
#include <limits>
#include <vector>

#include "backends/common/attention_dims.h"
#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Rounds x to `dtype` (a floating type) and back.
double round_to(DType dtype, double x) {
  switch (dtype) {
    case DType::Float32:
      return double(float(x));
    case DType::Float16:
      return double(bin::half_to_float(bin::double_to_half(x)));
    case DType::BFloat16:
      return double(bin::bfloat16_to_float(bin::double_to_bfloat16(x)));
    default:
      return x;
  }
}

// NumPy's max: NaN wins.
double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

void attention(KernelContext &ctx) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const Tensor &tq = ctx.input(0), &tk = ctx.input(1), &tv = ctx.input(2);
  const DType dt = tq.dtype();
  // Plain variables, not a structured binding: lambdas capture them (clang before 16 cannot).
  const AttentionDims dims = attention_dims(ctx);
  const bool rank3 = dims.rank3;
  const int64_t batch = dims.batch, hq = dims.q_heads, hkv = dims.kv_heads, sq = dims.q_seq,
                skv = dims.kv_seq, dk = dims.key_size, dv = dims.value_size;
  const int64_t past = ctx.has_input(4) ? ctx.input(4).shape()[2] : 0;
  const int64_t total = past + skv;
  const int64_t group = hq / hkv;

  const std::vector<double> q = to_f64(ctx, tq), k = to_f64(ctx, tk), v = to_f64(ctx, tv);
  std::vector<double> pk, pv;
  if (past > 0 || ctx.has_input(4)) {
    pk = to_f64(ctx, ctx.input(4));
    pv = to_f64(ctx, ctx.input(5));
  }
  // Present K/V: [B, Hkv, total, D], the past followed by the new keys.
  std::vector<double> key(static_cast<size_t>(batch * hkv * total * dk));
  std::vector<double> val(static_cast<size_t>(batch * hkv * total * dv));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hkv; ++h)
      for (int64_t s = 0; s < total; ++s) {
        const int64_t kbase = ((b * hkv + h) * total + s) * dk;
        const int64_t vbase = ((b * hkv + h) * total + s) * dv;
        for (int64_t d = 0; d < dk; ++d) {
          int64_t src;
          if (s < past)
            key[kbase + d] = pk[((b * hkv + h) * past + s) * dk + d];
          else {
            const int64_t t = s - past;
            src = rank3 ? (b * skv + t) * dims.k_row + dims.k_col + h * dk + d
                        : ((b * hkv + h) * skv + t) * dk + d;
            key[kbase + d] = k[src];
          }
        }
        for (int64_t d = 0; d < dv; ++d) {
          int64_t src;
          if (s < past)
            val[vbase + d] = pv[((b * hkv + h) * past + s) * dv + d];
          else {
            const int64_t t = s - past;
            src = rank3 ? (b * skv + t) * dims.v_row + dims.v_col + h * dv + d
                        : ((b * hkv + h) * skv + t) * dv + d;
            val[vbase + d] = v[src];
          }
        }
      }

  // Scale: sqrt(scale) applied to Q and to K, in the input dtype.
  const double scale =
      ctx.attrs.has("scale") ? ctx.attrs.get_float("scale", 1.0) : 1.0 / std::sqrt(double(dk));
  const double sc = round_to(dt, std::sqrt(scale));
  const double softcap = ctx.attrs.get_float("softcap", 0.0);
  const bool causal = ctx.attrs.get_int("is_causal", 0) != 0;
  const int64_t mode = ctx.attrs.get_int("qk_matmul_output_mode", 0);
  const int64_t left = ctx.attrs.get_int("left_window_size", -1);
  const int64_t right = ctx.attrs.get_int("right_window_size", -1);

  // The mask, right-aligned to [B, Hq, Sq, total]; its last dim is padded (not broadcast).
  std::vector<double> mask;
  bool mask_bool = false;
  int64_t mdims[4] = {1, 1, 1, 1};
  if (ctx.has_input(3)) {
    const Tensor &m = ctx.input(3);
    mask_bool = m.dtype() == DType::Bool;
    mask = to_f64(ctx, m);
    const size_t r = m.shape().rank();
    for (size_t i = 0; i < r; ++i) mdims[4 - r + i] = m.shape()[i];
  }
  std::vector<int64_t> nonpad;
  if (ctx.has_input(6)) {
    const Tensor &n = ctx.input(6);
    for (int64_t i = 0; i < n.numel(); ++i)
      nonpad.push_back(n.dtype() == DType::Int32 ? n.data<int32_t>()[i] : n.data<int64_t>()[i]);
  }

  std::vector<double> y(static_cast<size_t>(batch * hq * sq * dv));
  std::vector<double> qk_out(static_cast<size_t>(batch * hq * sq * total));
  std::vector<double> qk(total), bias(total), logits(total), p(total);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t offset = past > 0 || ctx.has_input(4) ? past
                           : nonpad.empty()             ? 0
                                                        : nonpad[b] - sq;
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kh = h / group;
      for (int64_t i = 0; i < sq; ++i) {
        for (int64_t j = 0; j < total; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < dk; ++d) {
            const int64_t qi = rank3 ? (b * sq + i) * dims.q_row + dims.q_col + h * dk + d
                                     : ((b * hq + h) * sq + i) * dk + d;
            acc += round_to(dt, q[qi] * sc) *
                   round_to(dt, key[((b * hkv + kh) * total + j) * dk + d] * sc);
          }
          double s = round_to(dt, acc);
          if (softcap > 0) s = round_to(dt, softcap * std::tanh(round_to(dt, s / softcap)));
          qk[j] = s;

          double bj = 0;
          if (!mask.empty()) {
            if (j >= mdims[3]) {
              bj = kNegInf;
            } else {
              const int64_t c[4] = {b, h, i, j};
              int64_t idx = 0;
              for (int a = 0; a < 4; ++a) idx = idx * mdims[a] + (mdims[a] == 1 ? 0 : c[a]);
              const double mv = mask[idx];
              bj = mask_bool ? (mv != 0 ? 0.0 : kNegInf) : mv;
            }
          }
          if (causal && j > i + offset) bj += kNegInf;
          if (left >= 0 || right >= 0) {
            const int64_t diff = i + offset - j;
            if ((left >= 0 && diff > left) || (right >= 0 && -diff > right)) bj += kNegInf;
          }
          if (!nonpad.empty() && j >= nonpad[b]) bj += kNegInf;
          bias[j] = round_to(dt, bj);
          logits[j] = round_to(dt, qk[j] + bias[j]);
        }
        double mx = kNegInf, bias_max = kNegInf;
        for (int64_t j = 0; j < total; ++j) {
          mx = nan_max(mx, logits[j]);
          bias_max = nan_max(bias_max, bias[j]);
        }
        // Softmax with each step rounded to the input dtype, as ONNX's definition computes it.
        const double safe = mx == kNegInf ? 0.0 : mx;
        double sum = 0;
        for (int64_t j = 0; j < total; ++j)
          sum += (p[j] = round_to(dt, std::exp(round_to(dt, logits[j] - safe))));
        sum = round_to(dt, sum);
        if (sum == 0) sum = 1;
        const bool all_masked = bias_max == kNegInf;
        for (int64_t j = 0; j < total; ++j) p[j] = all_masked ? 0.0 : round_to(dt, p[j] / sum);

        const int64_t row = ((b * hq + h) * sq + i) * total;
        for (int64_t j = 0; j < total; ++j)
          qk_out[row + j] = mode == 3 ? p[j] : mode == 2 ? logits[j] : qk[j];
        for (int64_t d = 0; d < dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j)
            acc += p[j] * val[((b * hkv + kh) * total + j) * dv + d];
          const int64_t yi =
              rank3 ? (b * sq + i) * hq * dv + h * dv + d : ((b * hq + h) * sq + i) * dv + d;
          y[yi] = acc;
        }
      }
    }
  }
  from_f64(ctx, ctx.output(0), y);
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) from_f64(ctx, ctx.output(1), key);
  if (ctx.outputs.size() > 2 && ctx.outputs[2]) from_f64(ctx, ctx.output(2), val);
  if (ctx.outputs.size() > 3 && ctx.outputs[3]) from_f64(ctx, ctx.output(3), qk_out);
}

LUMEN_REGISTER_KERNEL("reference", "attention", attention, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace
}  // namespace lumen
