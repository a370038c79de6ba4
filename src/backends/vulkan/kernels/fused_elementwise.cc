// fused_elementwise on Vulkan (fused_elementwise.comp): the chain runs in one pass over the
// output, float32. A dispatch takes up to 12 steps, 8 parametric ones and input 0 plus 5 other
// operands (what its push constants and bindings hold); a longer chain runs as several
// dispatches, each after the first continuing from the running value in the output.
#include <algorithm>
#include <limits>
#include <optional>

#include "backends/common/activation_code.h"
#include "backends/common/fused_chain_pieces.h"
#include "backends/vulkan/vulkan_stream.h"
#include "graph/ops/fused_elementwise_steps.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

constexpr size_t kSlots = 6, kMaxSteps = 12, kMaxParams = 16;

struct Push {
  uint32_t n, y_off, meta;
  uint32_t off[kSlots];
  uint32_t steps[kMaxSteps / 2];
  float params[kMaxParams];
};
static_assert(sizeof(Push) <= kMaxPushBytes);

bool parametric(const fused::Step &s) {
  switch (s.info->kind) {
    case fused::StepKind::LeakyRelu:
    case fused::StepKind::Elu:
    case fused::StepKind::HardSigmoid:
    case fused::StepKind::Clip:
      return true;
    default:
      return false;
  }
}

constexpr ChainLimits kLimits{
    .steps = kMaxSteps, .operands = kSlots, .params = kMaxParams, .parametric = parametric};

uint32_t binary_code(fused::StepKind kind) {
  switch (kind) {
    case fused::StepKind::Add:
      return 32;
    case fused::StepKind::Sub:
      return 33;
    case fused::StepKind::Mul:
      return 34;
    case fused::StepKind::Div:
      return 35;
    case fused::StepKind::Maximum:
      return 36;
    default:
      return 37;  // minimum
  }
}

std::string limits(const NodeQuery &node) {
  return chain_unsupported(node, kLimits);
}

void fused_elementwise(KernelContext &ctx) {
  const auto [steps, pieces] = kernel_chain(ctx, kLimits);
  const Tensor &x0 = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  if (n > std::numeric_limits<uint32_t>::max()) ctx.fail("over 2^32 elements");
  const Groups g = groups_for(static_cast<uint64_t>(n));
  for (size_t p = 0; p < pieces.size(); ++p) {
    const ChainPiece &piece = pieces[p];
    Push push{};
    push.n = static_cast<uint32_t>(n);
    push.y_off = element_offset(y);
    push.meta = static_cast<uint32_t>(piece.end - piece.begin) | (p > 0 ? 16u : 0u);
    std::vector<const Tensor *> bound{&y, &x0};
    std::vector<int64_t> slot_input{0};
    for (int64_t in : piece.inputs) slot_input.push_back(in);
    for (size_t slot = 0; slot < kSlots; ++slot) {
      // Slots no step reads are bound to input 0 (a shader's buffers must all be bound).
      const int64_t input = slot < slot_input.size() ? slot_input[slot] : 0;
      const Tensor &t = ctx.input(input);
      if (slot > 0) bound.push_back(&t);
      if (t.numel() != n && t.numel() != 1)
        ctx.fail("input ", input, " has ", t.numel(),
                 " elements; operands hold one or the output's ", n);
      push.off[slot] = element_offset(t);
      if (t.numel() == 1) push.meta |= 1u << (8 + slot);
    }
    size_t params = 0;
    for (size_t i = piece.begin; i < piece.end; ++i) {
      const fused::Step &s = steps[i];
      uint32_t word = 0;
      if (s.info->binary) {
        const auto slot = std::find(slot_input.begin(), slot_input.end(), s.operand);
        word = binary_code(s.info->kind) |
               static_cast<uint32_t>(slot - slot_input.begin() + 1) << 6 |
               (s.running_right ? 1u << 9 : 0u);
      } else {
        const std::optional<Activation> a =
            activation_of(s.info->op, fused::attrs_from_params(s.info->kind, s.params));
        if (!a) ctx.fail("step ", i, " (", s.info->op, ") has no Vulkan code");
        word = a->code;
        if (parametric(s)) {
          word |= static_cast<uint32_t>(params) << 10;
          push.params[params++] = a->alpha;
          push.params[params++] = a->beta;
        }
      }
      const size_t k = i - piece.begin;
      push.steps[k / 2] |= word << (16 * (k % 2));
    }
    dispatch(ctx, shaders::fused_elementwise, bound, push, g.x, g.y);
  }
}

}  // namespace

LUMEN_REGISTER_KERNEL("vulkan", "fused_elementwise", fused_elementwise, DType::Float32);
LUMEN_REGISTER_SUPPORTS("vulkan", "fused_elementwise", limits, DType::Float32);

}  // namespace lumen::vulkan
