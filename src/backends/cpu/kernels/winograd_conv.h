// 3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3): each 2x2 output tile
// comes from a 4x4 input tile with 16 multiplies per (input, output channel) pair instead of 36.
// The work becomes 16 GEMMs [M, C] x [C, tiles] on Lumen's GEMM between an input transform and an
// output transform, so 3x3 convs on 14x14 and larger maps run on 2.25x fewer multiplies.
#pragma once

#include <memory>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/thread_pool.h"

namespace lumen::cpu {

// The transformed weights U = G w G^T as 16 packed [M, C] GEMM operands, one per tile position.
struct WinogradWeights {
  int64_t m = 0, c = 0;
  std::vector<PackedA> u;
};

// Whether Winograd can run this conv: 3x3, stride 1, undilated, ungrouped.
bool winograd_possible(const ConvParams &p);
// Whether it pays off by the rule: possible, with enough channels (32 in, 64 out; 32 out on maps
// of 27x27 and more) and outputs (6x6) for the transforms to pay off.
bool winograd_applies(const ConvParams &p);

// The floats from one of the 16 transformed planes (V or products) to the next, for planes of
// `floats` floats: spaced so that their starts do not fall on the same 4 KiB offset. The
// transforms read or write all 16 at once; at 64 or 128 channels on 56x56 maps the plain sizes are
// multiples of 4 KiB, and the 16 streams then fight over one set of L1 lines (the transform ran
// 5x slower). Both layouts' Winograd use it.
inline int64_t winograd_plane_stride(int64_t floats) {
  return (floats + 1023) / 1024 * 1024 + 64;
}

// U = G g G^T of one 3x3 kernel g, G = [[1,0,0],[1/2,1/2,1/2],[1/2,-1/2,1/2],[0,0,1]].
void winograd_weight_transform(const float g[3][3], float u[4][4]);

// Transforms and packs weights [M, C, 3, 3].
std::shared_ptr<WinogradWeights> winograd_weights(const float *w, int64_t m, int64_t c);

// y = act(conv(x, w) + bias + residual) for every image; bias and residual may be nullptr.
void winograd_conv2d(ThreadPool &pool, const ConvParams &p, const float *x,
                     const WinogradWeights &weights, const float *bias, const float *residual,
                     const Epilogue<float> &epilogue, float *y);

}  // namespace lumen::cpu
