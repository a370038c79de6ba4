// Reductions across a block of kThreads threads: warp shuffles, then the warps' partial results.
#pragma once

#include <cuda_runtime.h>

namespace lumen::cuda {

inline constexpr int kBlockThreads = 256;

// Every thread of the block gets op over all threads' `v`. The block's threads must all call it.
template <class Op>
__device__ float block_reduce(float v, Op op) {
  __shared__ float partial[kBlockThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial may still be read by the previous reduction
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kBlockThreads / 32; ++w) v = op(v, partial[w]);
  return v;
}

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Prod {
  __device__ float operator()(float a, float b) const { return a * b; }
};
// NaN wins, so a row holding one gives NaN, as on the CPU.
struct Max {
  __device__ float operator()(float a, float b) const {
    return (a != a || b != b) ? a + b : fmaxf(a, b);
  }
};
struct Min {
  __device__ float operator()(float a, float b) const {
    return (a != a || b != b) ? a + b : fminf(a, b);
  }
};

}  // namespace lumen::cuda
