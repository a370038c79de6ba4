// What the element-wise CUDA kernels share: a thread per element in grid-stride loops of 256-thread
// blocks, and the operands' element offsets along a Walk.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {

inline constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

#define LUMEN_GRID_LOOP(i, count)                                               \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (count); \
       i += int64_t{gridDim.x} * blockDim.x)

// Element offsets of output element i in the walk's first `Operands` operands.
template <int Operands>
__device__ inline void walk_offsets(const Walk &w, int64_t i, int64_t (&at)[Operands]) {
  for (int o = 0; o < Operands; ++o) at[o] = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    const int64_t n = w.shape[d], q = i / n, r = i - q * n;
    for (int o = 0; o < Operands; ++o) at[o] += r * w.stride[o][d];
    i = q;
  }
}

}  // namespace lumen::cuda
