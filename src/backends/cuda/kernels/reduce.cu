// Reductions over any set of axes on CUDA (float32): a block per output element
// (block_reduce.cuh).
#include <cmath>

#include "backends/cuda/kernels/block_reduce.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

// Element offset of element i of a walk (operand 0's strides).
__device__ inline int64_t offset_of(const Walk &w, int64_t i) {
  int64_t at = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    const int64_t n = w.shape[d], q = i / n;
    at += (i - q * n) * w.stride[0][d];
    i = q;
  }
  return at;
}

__device__ inline float term(int kind, float v, float shift) {
  switch (kind) {
    case kReduceL1:
      return fabsf(v);
    case kReduceL2:
    case kReduceSumSquare:
      return v * v;
    case kReduceLogSumExp:
      return expf(v - shift);
    default:
      return v;
  }
}

__global__ void reduce_kernel(int kind, const float *x, float *y, Walk kept, Walk reduced) {
  const int64_t out = blockIdx.x;
  const float *in = x + offset_of(kept, out);
  const bool is_max = kind == kReduceMax, is_min = kind == kReduceMin,
             is_prod = kind == kReduceProd;
  float shift = 0.f;
  if (kind == kReduceLogSumExp) {  // exp(v - max): no overflow
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < reduced.count; j += kBlockThreads)
      m = Max()(m, in[offset_of(reduced, j)]);
    shift = block_reduce(m, Max());
    if (isinf(shift)) shift = 0.f;  // all -inf (or +inf): the plain sum gives the answer
  }
  float acc = is_max ? -INFINITY : is_min ? INFINITY : is_prod ? 1.f : 0.f;
  for (int64_t j = threadIdx.x; j < reduced.count; j += kBlockThreads) {
    const float v = term(kind, in[offset_of(reduced, j)], shift);
    acc = is_max ? Max()(acc, v) : is_min ? Min()(acc, v) : is_prod ? acc * v : acc + v;
  }
  acc = is_max    ? block_reduce(acc, Max())
        : is_min  ? block_reduce(acc, Min())
        : is_prod ? block_reduce(acc, Prod())
                  : block_reduce(acc, Sum());
  if (threadIdx.x != 0) return;
  switch (kind) {
    case kReduceMean:
      acc /= static_cast<float>(reduced.count);
      break;
    case kReduceL2:
      acc = sqrtf(acc);
      break;
    case kReduceLogSum:
      acc = logf(acc);
      break;
    case kReduceLogSumExp:
      acc = shift + logf(acc);
      break;
    default:
      break;
  }
  y[out] = acc;
}

}  // namespace

cudaError_t launch_reduce(int kind, const float *x, float *y, const Walk &kept, const Walk &reduced,
                          cudaStream_t stream) {
  if (kept.count == 0) return cudaSuccess;
  if (kept.count > 0x7fffffff) return cudaErrorInvalidValue;
  reduce_kernel<<<static_cast<unsigned>(kept.count), kBlockThreads, 0, stream>>>(kind, x, y, kept,
                                                                                 reduced);
  return cudaGetLastError();
}

}  // namespace lumen::cuda
