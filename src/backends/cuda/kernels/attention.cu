// Attention on CUDA: a block per (batch, head, query row). Keys come in chunks of kChunk: the
// chunk's scores go to shared memory, the running maximum, sum and output (a few values of the
// output row per thread) are rescaled as each chunk arrives, so memory does not grow with the
// sequence.
#include <cmath>

#include "backends/cuda/kernels/block_reduce.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

constexpr int kChunk = 2048;
constexpr int kPerThread = kMaxAttentionValueSize / kBlockThreads;

// The additive bias of position j for row (b, h, i): the mask, causality and windows.
__device__ float bias_of(const AttentionParams &p, int64_t b, int64_t h, int64_t i, int64_t j) {
  float bias = 0.f;
  if (p.mask) {
    if (j >= p.mask_dims[3]) return -INFINITY;
    const int64_t c[4] = {b, h, i, j};
    int64_t at = 0;
    for (int a = 0; a < 4; ++a) at = at * p.mask_dims[a] + (p.mask_dims[a] == 1 ? 0 : c[a]);
    if (p.mask_bool) {
      if (!static_cast<const bool *>(p.mask)[at]) return -INFINITY;
    } else {
      bias = static_cast<const float *>(p.mask)[at];
    }
  }
  if (p.causal && j > i) return -INFINITY;
  const int64_t diff = i - j;
  if ((p.left_window >= 0 && diff > p.left_window) ||
      (p.right_window >= 0 && -diff > p.right_window))
    return -INFINITY;
  return bias;
}

__global__ void attention_kernel(AttentionParams p) {
  extern __shared__ float shared[];
  float *q_row = shared, *scores = shared + p.dk;
  const int64_t row = blockIdx.x;
  const int64_t i = row % p.q_seq, h = (row / p.q_seq) % p.q_heads, b = row / (p.q_seq * p.q_heads);
  const int64_t kh = h / (p.q_heads / p.kv_heads);
  const float *q = p.q + b * p.q_stride[0] + h * p.q_stride[1] + i * p.q_stride[2];
  const float *k = p.k + b * p.k_stride[0] + kh * p.k_stride[1];
  const float *v = p.v + b * p.v_stride[0] + kh * p.v_stride[1];
  for (int64_t d = threadIdx.x; d < p.dk; d += kBlockThreads) q_row[d] = q[d] * p.scale;
  __syncthreads();
  float running_max = -INFINITY, running_sum = 0.f, out[kPerThread] = {};
  for (int64_t start = 0; start < p.kv_seq; start += kChunk) {
    const int64_t count = min(int64_t{kChunk}, p.kv_seq - start);
    float chunk_max = -INFINITY;
    for (int64_t c = threadIdx.x; c < count; c += kBlockThreads) {
      const int64_t j = start + c;
      const float *key = k + j * p.k_stride[2];
      float s = 0.f;
      for (int64_t d = 0; d < p.dk; ++d) s += q_row[d] * key[d];
      if (p.softcap > 0) s = p.softcap * tanhf(s / p.softcap);
      s += bias_of(p, b, h, i, j);
      scores[c] = s;
      chunk_max = Max()(chunk_max, s);
    }
    chunk_max = block_reduce(chunk_max, Max());  // also orders the scores' writes before reads
    const float new_max = Max()(running_max, chunk_max);
    if (new_max == -INFINITY) continue;  // everything so far masked
    const float rescale = running_max == -INFINITY ? 0.f : expf(running_max - new_max);
    float chunk_sum = 0.f;
    for (int64_t c = threadIdx.x; c < count; c += kBlockThreads)
      chunk_sum += (scores[c] = expf(scores[c] - new_max));
    chunk_sum = block_reduce(chunk_sum, Sum());
    running_sum = running_sum * rescale + chunk_sum;
    for (int r = 0; r < kPerThread; ++r) {
      const int64_t d = threadIdx.x + int64_t{r} * kBlockThreads;
      if (d >= p.dv) break;
      float acc = out[r] * rescale;
      for (int64_t c = 0; c < count; ++c) acc += scores[c] * v[(start + c) * p.v_stride[2] + d];
      out[r] = acc;
    }
    running_max = new_max;
    __syncthreads();  // the next chunk overwrites the scores
  }
  float *y = p.y + b * p.y_stride[0] + h * p.y_stride[1] + i * p.y_stride[2];
  // A row with every position masked gives zeros, as the reference does.
  const float inv = running_sum > 0.f ? 1.f / running_sum : 0.f;
  for (int r = 0; r < kPerThread; ++r) {
    const int64_t d = threadIdx.x + int64_t{r} * kBlockThreads;
    if (d < p.dv) y[d] = out[r] * inv;
  }
}

}  // namespace

cudaError_t launch_attention(const AttentionParams &p, cudaStream_t stream) {
  const int64_t rows = p.batch * p.q_heads * p.q_seq;
  if (rows == 0 || p.dv == 0) return cudaSuccess;
  if (rows > 0x7fffffff || p.dv > kMaxAttentionValueSize || p.kv_heads <= 0 ||
      p.q_heads % p.kv_heads != 0)
    return cudaErrorInvalidValue;
  const size_t shared = static_cast<size_t>(p.dk + kChunk) * sizeof(float);
  if (shared > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(
        attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (e != cudaSuccess) return e;
  }
  attention_kernel<<<static_cast<unsigned>(rows), kBlockThreads, shared, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace lumen::cuda
