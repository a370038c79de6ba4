// Convolutions with one input channel per group (depthwise, possibly with a channel multiplier):
// direct loops, where im2col would only add copying to a tiny GEMM.
#pragma once

#include "backends/common/epilogue.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/thread_pool.h"

namespace lumen {

// y = act(conv(x, w) + bias + residual); output channel m reads input channel m / p.mg. `bias`
// and `residual` may be nullptr.
template <class T>
void depthwise_conv2d(ThreadPool &pool, const ConvParams &p, const T *x, const T *w, const T *bias,
                      const T *residual, const Epilogue<T> &epilogue, T *y);

}  // namespace lumen
