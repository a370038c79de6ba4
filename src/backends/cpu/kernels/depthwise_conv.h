// Convolutions with one input channel per group (depthwise, possibly with a channel multiplier):
// direct loops, where im2col would only add copying to a tiny GEMM.
#pragma once

#include <cstdint>

#include "backends/common/epilogue.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/thread_pool.h"

namespace lumen {

// The two ways a depthwise conv runs: channels in vector lanes, or plane by plane (see the .cc).
// kRule picks by the measured crossovers in depthwise_lanes_pay_off; a compile-time measurement
// (conv.cc, kernel_choice.h) may pick either where both are available.
enum class DepthwiseAlgorithm : uint8_t { kRule, kLanes, kPlanes };

// Whether channels in lanes can run this conv (float32, AVX2 or better, one output channel per
// input channel, no negative padding, not a stride-1 unpadded 1x1), and whether the rule takes it.
bool depthwise_lanes_available(const ConvParams &p);
bool depthwise_lanes_pay_off(const ConvParams &p);

// y = act(conv(x, w) + bias + residual); output channel m reads input channel m / p.mg. `bias`
// and `residual` may be nullptr.
template <class T>
void depthwise_conv2d(ThreadPool &pool, const ConvParams &p, const T *x, const T *w, const T *bias,
                      const T *residual, const Epilogue<T> &epilogue, T *y,
                      DepthwiseAlgorithm algorithm = DepthwiseAlgorithm::kRule);

}  // namespace lumen
