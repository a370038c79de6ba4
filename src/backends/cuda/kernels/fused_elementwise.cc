// fused_elementwise on CUDA: the chain runs in one pass over the output, float32. A launch takes
// up to kMaxFusedSteps steps and input 0 plus kMaxFusedOperands - 1 other operands; a longer
// chain runs as several launches, each after the first continuing from the running value in the
// output.
#include <algorithm>

#include "backends/common/activation_code.h"
#include "backends/common/fused_chain_pieces.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

constexpr ChainLimits kLimits{.steps = kMaxFusedSteps, .operands = kMaxFusedOperands};

int binary_code(fused::StepKind kind) {
  switch (kind) {
    case fused::StepKind::Add:
      return kAdd;
    case fused::StepKind::Sub:
      return kSub;
    case fused::StepKind::Mul:
      return kMul;
    case fused::StepKind::Div:
      return kDiv;
    case fused::StepKind::Maximum:
      return kMax;
    default:
      return kMin;
  }
}

std::string limits(const NodeQuery &node) {
  return chain_unsupported(node, kLimits);
}

void fused_elementwise(KernelContext &ctx) {
  const auto [steps, pieces] = kernel_chain(ctx, kLimits);
  Tensor &y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const ChainPiece &piece = pieces[p];
    FusedProgram program;
    program.continues = p > 0;
    std::vector<int64_t> slot_input{0};
    for (int64_t in : piece.inputs) slot_input.push_back(in);
    for (size_t slot = 0; slot < slot_input.size(); ++slot) {
      const Tensor &t = ctx.input(static_cast<size_t>(slot_input[slot]));
      if (t.numel() != n && t.numel() != 1)
        ctx.fail("input ", slot_input[slot], " has ", t.numel(),
                 " elements; operands hold one or the output's ", n);
      program.operands[slot] = device_data(t);
      program.scalar[slot] = t.numel() == 1;
    }
    for (size_t i = piece.begin; i < piece.end; ++i) {
      const fused::Step &s = steps[i];
      const size_t k = i - piece.begin;
      if (s.info->binary) {
        const auto slot = std::find(slot_input.begin(), slot_input.end(), s.operand);
        program.code[k] = kFusedBinary + binary_code(s.info->kind);
        program.operand[k] = static_cast<int>(slot - slot_input.begin());
        program.running_right[k] = s.running_right;
      } else {
        const std::optional<Activation> a =
            activation_of(s.info->op, fused::attrs_from_params(s.info->kind, s.params));
        if (!a) ctx.fail("step ", i, " (", s.info->op, ") has no CUDA code");
        program.code[k] = static_cast<int>(a->code);
        program.alpha[k] = a->alpha, program.beta[k] = a->beta;
      }
    }
    program.steps = static_cast<int>(piece.end - piece.begin);
    check_launch(ctx, launch_fused_elementwise(program, device_data(y), n, stream_of(ctx)));
  }
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "fused_elementwise", fused_elementwise, DType::Float32);
LUMEN_REGISTER_SUPPORTS("cuda", "fused_elementwise", limits, DType::Float32);

}  // namespace lumen::cuda
