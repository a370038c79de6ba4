// 3x3 stride-1 dense convs in the channel-blocked layout NCHW8c by Winograd's F(2x2, 3x3)
// (winograd_conv.h does the same in NCHW). The layout suits it: a tile's input and output
// transforms are element-wise over channels, so eight channels of a pixel are one vector, and the
// 16 products per tile position are pointwise convs over the tiles, run by the blocked pointwise
// tile (f32_nchwc.h) with no packing of the transformed input.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/ukernels/f32_nchwc.h"
#include "core/thread_pool.h"

namespace lumen::cpu {

// U = G w G^T for every (output, input) channel pair, as 16 pointwise weights (one per tile
// position k): for each filter group (first block, F blocks) of `groups`,
// [C][F][8] at u + k * M * C + first * 8 * C.
struct NchwcWinogradWeights {
  int64_t m = 0;  // output channels
  std::vector<int64_t> groups;  // first output block of each filter group, then M / 8
  AlignedFloats u;
};

// Weights w [M, C, 3, 3]; M and C multiples of 8.
std::shared_ptr<NchwcWinogradWeights> nchwc_winograd_weights(const float *w, int64_t m, int64_t c,
                                                             std::vector<int64_t> groups);

using NchwcTileKernel = void (*)(const ukernels::NchwcConvTile &, int64_t pixels);

// One conv's operands, blocked: x [n, cb, h, w, 8], y and residual [n, mb, oh, ow, 8].
struct NchwcWinogradConv {
  int64_t n, cb, h, w, mb, oh, ow, pt, pl;
  const float *x, *bias, *residual;  // bias [mb * 8] and residual may be nullptr
  float *y;
  float lo, hi;                     // clamp applied as outputs are stored
  const Epilogue<float> *epilogue;  // applied after each item's outputs; nullptr: none
  NchwcTileKernel tile;             // the pointwise tile (AVX2 or portable)
};

void nchwc_winograd_conv(ThreadPool &pool, const NchwcWinogradConv &conv,
                         const NchwcWinogradWeights &weights);

}  // namespace lumen::cpu
