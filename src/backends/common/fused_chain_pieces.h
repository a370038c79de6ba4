// A fused_elementwise chain cut into the pieces a device kernel runs one after another, each
// within the kernel's limits (steps, operands, parameters); pieces after the first continue from
// the running value in the output. Shared by the Vulkan and CUDA kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "graph/ops/fused_elementwise_steps.h"

namespace lumen {

struct ChainPiece {
  size_t begin = 0, end = 0;    // steps [begin, end)
  std::vector<int64_t> inputs;  // the inputs other than input 0 its steps read, in order
};

struct ChainLimits {
  size_t steps = 0;
  size_t operands = 0;  // input 0 included
  size_t params = SIZE_MAX;
  bool (*parametric)(const fused::Step &) = nullptr;  // a step taking two parameters
};

inline std::vector<ChainPiece> split_chain(const std::vector<fused::Step> &steps,
                                           const ChainLimits &limits) {
  std::vector<ChainPiece> pieces;
  ChainPiece piece;
  size_t params = 0;
  const auto new_input = [&](const fused::Step &s) {
    return s.info->binary && s.operand != 0 &&
           std::find(piece.inputs.begin(), piece.inputs.end(), s.operand) == piece.inputs.end();
  };
  const auto parametric = [&](const fused::Step &s) {
    return limits.parametric && limits.parametric(s);
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const fused::Step &s = steps[i];
    if (i - piece.begin == limits.steps || (parametric(s) && params + 2 > limits.params) ||
        (new_input(s) && piece.inputs.size() + 1 == limits.operands)) {
      piece.end = i;
      pieces.push_back(std::move(piece));
      piece = ChainPiece{.begin = i};
      params = 0;
    }
    if (new_input(s)) piece.inputs.push_back(s.operand);
    if (parametric(s)) params += 2;
  }
  piece.end = steps.size();
  pieces.push_back(std::move(piece));
  return pieces;
}

// Whether a piece after the first reads input 0, which the first may have overwritten (the
// planner lets an element-wise op write over its input 0).
inline bool later_piece_reads_input0(const std::vector<fused::Step> &steps,
                                     const std::vector<ChainPiece> &pieces) {
  for (size_t p = 1; p < pieces.size(); ++p)
    for (size_t i = pieces[p].begin; i < pieces[p].end; ++i)
      if (steps[i].info->binary && steps[i].operand == 0) return true;
  return false;
}

// A kernel's chain: the node's steps and the pieces it runs them in. Fails where a piece after
// the first reads input 0 and the (non-empty) output was planned over it (the first piece
// overwrote it).
struct KernelChain {
  std::vector<fused::Step> steps;
  std::vector<ChainPiece> pieces;
};
inline KernelChain kernel_chain(const KernelContext &ctx, const ChainLimits &limits) {
  KernelChain chain{fused::decode_steps(ctx.attrs, ctx.inputs.size()), {}};
  chain.pieces = split_chain(chain.steps, limits);
  if (ctx.output(0).numel() > 0 && later_piece_reads_input0(chain.steps, chain.pieces) &&
      ctx.input(0).raw_data() == ctx.output(0).raw_data())
    ctx.fail("the chain reads input 0 after its first pass, which overwrote it");
  return chain;
}

// A kernel's SupportsFn body: "" where the node's chain runs within `limits`, else why not.
inline std::string chain_unsupported(const NodeQuery &node, const ChainLimits &limits) {
  try {
    const std::vector<fused::Step> steps =
        fused::decode_steps(node.attributes(), node.inputs.size());
    if (later_piece_reads_input0(steps, split_chain(steps, limits)))
      return "a chain this long that reads input 0 again after its first pass";
  } catch (const Error &e) {
    return e.what();
  }
  return {};
}

}  // namespace lumen
