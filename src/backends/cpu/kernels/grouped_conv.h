// Grouped convolutions with few output channels per group (RegNet's and ResNeXt's 8 per group),
// and very shallow ones (first layers on RGB): 8 output channels in the lanes of a vector, the
// input read in place, instead of a GEMM whose A has only mg rows or whose depth is ~27.
#pragma once

#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/thread_pool.h"

namespace lumen::cpu {

// Whether grouped_conv_in_lanes takes a conv with these groups and kernel taps (kh * kw) on this
// CPU (any strides, pads and dilations).
bool grouped_conv_in_lanes_applies(int64_t group, int64_t cg, int64_t mg, int64_t taps);

// The weights [M, cg, kh, kw] rearranged for it: [M / 8][cg][kh][kw][8].
std::vector<float> grouped_conv_lane_weights(const float *w, int64_t m, int64_t cg, int64_t taps);

// y = act(conv(x, w) + bias + residual); lane_weights from grouped_conv_lane_weights. `bias` and
// `residual` may be nullptr.
void grouped_conv_in_lanes(ThreadPool &pool, const ConvParams &p, const float *x,
                           const float *lane_weights, const float *bias, const float *residual,
                           const Epilogue<float> &epilogue, float *y);

}  // namespace lumen::cpu
