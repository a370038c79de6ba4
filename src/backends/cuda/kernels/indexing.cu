// Gather along an axis on CUDA: a thread per output element, elements of 1 to 8 bytes, int32 or
// int64 indices (checked on the host before the launch).
#include <cstdint>

#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

template <class T, class I>
__global__ void gather_kernel(const T *data, const I *indices, T *y, int64_t outer,
                              int64_t axis_len, int64_t n_indices, int64_t inner) {
  LUMEN_GRID_LOOP(i, outer * n_indices * inner) {
    const int64_t k = i % inner, j = (i / inner) % n_indices, o = i / (inner * n_indices);
    int64_t at = static_cast<int64_t>(indices[j]);
    if (at < 0) at += axis_len;
    y[i] = data[(o * axis_len + at) * inner + k];
  }
}

template <class T>
void gather_as(const void *data, const void *indices, bool int64, void *y, int64_t outer,
               int64_t axis_len, int64_t n, int64_t inner, unsigned blocks, cudaStream_t stream) {
  if (int64)
    gather_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const T *>(data),
                                                   static_cast<const int64_t *>(indices),
                                                   static_cast<T *>(y), outer, axis_len, n, inner);
  else
    gather_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const T *>(data),
                                                   static_cast<const int32_t *>(indices),
                                                   static_cast<T *>(y), outer, axis_len, n, inner);
}

}  // namespace

cudaError_t launch_gather(int element_bytes, const void *data, const void *indices,
                          bool indices_int64, void *y, int64_t outer, int64_t axis_len,
                          int64_t n_indices, int64_t inner, cudaStream_t stream) {
  const int64_t count = outer * n_indices * inner;
  if (count == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(count);
  switch (element_bytes) {
    case 1:
      gather_as<uint8_t>(data, indices, indices_int64, y, outer, axis_len, n_indices, inner, blocks,
                         stream);
      break;
    case 2:
      gather_as<uint16_t>(data, indices, indices_int64, y, outer, axis_len, n_indices, inner,
                          blocks, stream);
      break;
    case 4:
      gather_as<uint32_t>(data, indices, indices_int64, y, outer, axis_len, n_indices, inner,
                          blocks, stream);
      break;
    case 8:
      gather_as<uint64_t>(data, indices, indices_int64, y, outer, axis_len, n_indices, inner,
                          blocks, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace lumen::cuda
