// Row kernels on CUDA: softmax / log-softmax along any axis, layer and RMS normalization. A block
// of 256 threads per row (block_reduce.cuh).
#include <cmath>

#include "backends/cuda/kernels/block_reduce.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = kBlockThreads;

__global__ void softmax_kernel(const float *x, float *y, int64_t len, int64_t inner, bool log) {
  const int64_t row = blockIdx.x, outer = row / inner, i = row - outer * inner;
  const int64_t base = outer * len * inner + i;
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < len; k += kThreads) m = Max()(m, x[base + k * inner]);
  m = block_reduce(m, Max());
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < len; k += kThreads) s += expf(x[base + k * inner] - m);
  s = block_reduce(s, Sum());
  const float log_s = logf(s), inv = 1.f / s;
  for (int64_t k = threadIdx.x; k < len; k += kThreads) {
    const float v = x[base + k * inner] - m;
    y[base + k * inner] = log ? v - log_s : expf(v) * inv;
  }
}

__global__ void layer_norm_kernel(const float *x, const float *scale, int64_t scale_stride,
                                  const float *bias, int64_t bias_stride, float *y, float *mean,
                                  float *inv_std, int64_t len, float epsilon, bool rms) {
  const int64_t row = blockIdx.x;
  const float *in = x + row * len;
  float *out = y + row * len;
  float s = 0.f;
  if (!rms)
    for (int64_t k = threadIdx.x; k < len; k += kThreads) s += in[k];
  const float mu = rms ? 0.f : block_reduce(s, Sum()) / static_cast<float>(len);
  float d2 = 0.f;  // two passes: the variance of values far from zero keeps its digits
  for (int64_t k = threadIdx.x; k < len; k += kThreads) d2 += (in[k] - mu) * (in[k] - mu);
  const float inv = rsqrtf(block_reduce(d2, Sum()) / static_cast<float>(len) + epsilon);
  for (int64_t k = threadIdx.x; k < len; k += kThreads) {
    const float v = (in[k] - mu) * inv * scale[k * scale_stride];
    out[k] = bias ? v + bias[k * bias_stride] : v;
  }
  if (threadIdx.x == 0) {
    if (mean) mean[row] = mu;
    if (inv_std) inv_std[row] = inv;
  }
}

}  // namespace

cudaError_t launch_softmax(const float *x, float *y, int64_t rows, int64_t len, int64_t inner,
                           bool log, cudaStream_t stream) {
  if (rows == 0 || len == 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, len, inner, log);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm(const float *x, const float *scale, int64_t scale_stride,
                              const float *bias, int64_t bias_stride, float *y, float *mean,
                              float *inv_std, int64_t rows, int64_t len, float epsilon, bool rms,
                              cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x, scale, scale_stride, bias, bias_stride, y, mean, inv_std, len, epsilon, rms);
  return cudaGetLastError();
}

}  // namespace lumen::cuda
