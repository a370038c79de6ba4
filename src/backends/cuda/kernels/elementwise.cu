// Element-wise CUDA kernels: binary ops with broadcasting, activations, fused element-wise chains,
// local response normalization, fills and strided copies. One thread per output element in a
// grid-stride loop.
#include <cmath>

#include "backends/cuda/kernels/activations.cuh"
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

__global__ void binary_kernel(int code, const float *a, const float *b, float *c, Walk w) {
  LUMEN_GRID_LOOP(i, w.count) {
    int64_t at[2];
    walk_offsets(w, i, at);
    c[i] = apply_binary(code, a[at[0]], b[at[1]]);
  }
}

__global__ void unary_kernel(unsigned code, float alpha, float beta, const float *x, float *y,
                             Walk w) {
  LUMEN_GRID_LOOP(i, w.count) {
    int64_t at[1];
    walk_offsets(w, i, at);
    y[i] = activate(code, x[at[0]], alpha, beta);
  }
}

__global__ void fused_kernel(FusedProgram p, float *y, int64_t n) {
  LUMEN_GRID_LOOP(i, n) {
    float v = p.continues ? y[i] : p.operands[0][p.scalar[0] ? 0 : i];
    for (int s = 0; s < p.steps; ++s) {
      const int code = p.code[s];
      if (code >= kFusedBinary) {
        const int slot = p.operand[s];
        const float b = p.operands[slot][p.scalar[slot] ? 0 : i];
        v = p.running_right[s] ? apply_binary(code - kFusedBinary, b, v)
                               : apply_binary(code - kFusedBinary, v, b);
      } else {
        v = activate(static_cast<unsigned>(code), v, p.alpha[s], p.beta[s]);
      }
    }
    y[i] = v;
  }
}

__global__ void lrn_kernel(const float *x, float *y, int64_t C, int64_t plane, int64_t size,
                           int64_t n, float alpha, float beta, float bias) {
  LUMEN_GRID_LOOP(i, n) {
    const int64_t s = i % plane, c = (i / plane) % C, batch = i / (plane * C);
    const int64_t lo = max(int64_t{0}, c - (size - 1) / 2), hi = min(C - 1, c + size / 2);
    float sum = 0.f;
    for (int64_t k = lo; k <= hi; ++k) {
      const float v = x[(batch * C + k) * plane + s];
      sum += v * v;
    }
    y[i] = x[i] / powf(bias + alpha / static_cast<float>(size) * sum, beta);
  }
}

template <class T>
__global__ void fill_kernel(T *y, int64_t n, T value) {
  LUMEN_GRID_LOOP(i, n) {
    y[i] = value;
  }
}

template <class T>
__global__ void copy_kernel(const T *x, T *y, Walk w) {
  LUMEN_GRID_LOOP(i, w.count) {
    int64_t at[2];
    walk_offsets(w, i, at);
    y[at[1]] = x[at[0]];
  }
}

}  // namespace

cudaError_t launch_binary(int code, const float *a, const float *b, float *c, const Walk &walk,
                          cudaStream_t stream) {
  if (walk.count == 0) return cudaSuccess;
  binary_kernel<<<blocks_for(walk.count), kThreads, 0, stream>>>(code, a, b, c, walk);
  return cudaGetLastError();
}

cudaError_t launch_unary(unsigned code, float alpha, float beta, const float *x, float *y,
                         const Walk &walk, cudaStream_t stream) {
  if (walk.count == 0) return cudaSuccess;
  unary_kernel<<<blocks_for(walk.count), kThreads, 0, stream>>>(code, alpha, beta, x, y, walk);
  return cudaGetLastError();
}

cudaError_t launch_fused_elementwise(const FusedProgram &program, float *y, int64_t n,
                                     cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fused_kernel<<<blocks_for(n), kThreads, 0, stream>>>(program, y, n);
  return cudaGetLastError();
}

cudaError_t launch_lrn(const float *x, float *y, int64_t batch, int64_t C, int64_t plane,
                       int64_t size, float alpha, float beta, float bias, cudaStream_t stream) {
  const int64_t n = batch * C * plane;
  if (n == 0) return cudaSuccess;
  lrn_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, C, plane, size, n, alpha, beta, bias);
  return cudaGetLastError();
}

cudaError_t launch_fill(void *y, int64_t n, int element_bytes, uint64_t value,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(n);
  switch (element_bytes) {
    case 1:
      fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint8_t *>(y), n,
                                                   static_cast<uint8_t>(value));
      break;
    case 2:
      fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint16_t *>(y), n,
                                                   static_cast<uint16_t>(value));
      break;
    case 4:
      fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint32_t *>(y), n,
                                                   static_cast<uint32_t>(value));
      break;
    case 8:
      fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint64_t *>(y), n, value);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_strided_copy(int element_bytes, const void *x, void *y, const Walk &walk,
                                cudaStream_t stream) {
  if (walk.count == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(walk.count);
  switch (element_bytes) {
    case 1:
      copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint8_t *>(x),
                                                   static_cast<uint8_t *>(y), walk);
      break;
    case 2:
      copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t *>(x),
                                                   static_cast<uint16_t *>(y), walk);
      break;
    case 4:
      copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint32_t *>(x),
                                                   static_cast<uint32_t *>(y), walk);
      break;
    case 8:
      copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint64_t *>(x),
                                                   static_cast<uint64_t *>(y), walk);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace lumen::cuda
