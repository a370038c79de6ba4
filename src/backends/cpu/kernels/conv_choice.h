// Kernel choice by measurement (kernel_choice.h) for conv steps: scratch operands of the step's
// real shapes, and the choice among a conv kernel's candidate algorithms. Shared by the NCHW conv
// (conv.cc) and the blocked one (nchwc.cc); the blocked layout has the same element counts.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/kernel_choice.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/kernel.h"

namespace lumen {

// Scratch operands of the step's real shapes for timing its candidate algorithms: the real
// weights and (when constant) bias, made-up input and residual values; 64-byte aligned, as
// kernels that read and write whole vectors (the blocked layout's) need.
struct ConvTiming {
  cpu::AlignedFloats x, y, residual_values;
  std::vector<float> scratch_bias;
  const float *bias = nullptr, *residual = nullptr;
  bool feasible = false;

  ConvTiming(const PrepareContext &ctx, const ConvParams &p) {
    // A budget on the scratch: timing never costs more memory than a few activations.
    constexpr int64_t kMaxFloats = int64_t(1) << 25;
    const int64_t in = p.n * p.c * p.h * p.w, out = p.n * p.m * p.oh * p.ow;
    if (p.n < 1 || in > kMaxFloats || out > kMaxFloats) return;
    x.resize(static_cast<size_t>(in));
    for (int64_t i = 0; i < in; ++i) x.data()[i] = float(int(i % 17) - 8) * 0.125f;
    y.resize(static_cast<size_t>(out));
    const auto given = [&](size_t i) {
      return ctx.input_shapes.size() > i && ctx.input_shapes[i].rank() > 0;
    };
    if (const Tensor *b = ctx.constant(2)) {
      bias = b->data<float>();
    } else if (given(2)) {
      scratch_bias.assign(static_cast<size_t>(p.m), 0.5f);
      bias = scratch_bias.data();
    }
    if (given(3)) {
      residual_values.resize(static_cast<size_t>(out));
      std::fill_n(residual_values.data(), out, 0.25f);
      residual = residual_values.data();
    }
    feasible = true;
  }
};

// Chooses among `names` (kernel_choice.h): run(i, timing, epilogue) runs candidate i on the
// timing's scratch operands, where measuring is on and the step is small enough to time;
// before(i), where given, runs untimed before each (AlgorithmCandidate::before).
template <class Run>
size_t choose_for_step(const PrepareContext &ctx, const ConvParams &p, const Tensor &w,
                       const std::vector<std::string> &names, size_t rule, const Run &run,
                       const std::function<void(size_t)> &before = {}) {
  std::optional<ConvTiming> t;
  if (names.size() > 1 && cpu::calibration_enabled() && ctx.pool) t.emplace(ctx, p);
  if (t && !t->feasible) t.reset();
  const Epilogue<float> epilogue(ctx.attrs, ctx.op, ctx.node);
  std::vector<cpu::AlgorithmCandidate> candidates;
  for (size_t i = 0; i < names.size(); ++i) {
    candidates.push_back({names[i], nullptr});
    if (t) candidates.back().run = [&, i] { run(i, *t, epilogue); };
    if (t && before) candidates.back().before = [&, i] { before(i); };
  }
  // "fused_conv x=[2, 96, 7, 7] w=[576, 96, 1, 1] bias {...}": what the timings depend on.
  const std::string key = t ? std::string(ctx.op) + " x=" + Shape{p.n, p.c, p.h, p.w}.to_string() +
                                  " w=" + w.shape().to_string() + (t->bias ? " bias" : "") +
                                  (t->residual ? " residual" : "") + ' ' + ctx.attrs.to_string()
                            : "";
  return cpu::choose_algorithm(key, candidates, rule, ctx.pool ? ctx.pool->size() : 1,
                               ctx.algorithm);
}

}  // namespace lumen
