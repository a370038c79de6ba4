// The CUDA kernels' launchers (*.cu, compiled by nvcc): plain values in, the launch's error out.
// The kernels' registered functions (*.cc) work out shapes and strides and call these.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace lumen::cuda {

inline constexpr int kMaxDims = 8;

// An element-wise walk over the output's elements in row-major order: `rank` dims of `shape`,
// each operand read at its own element strides (0 where it is broadcast).
struct Walk {
  int rank = 0;
  int64_t count = 1;
  int64_t shape[kMaxDims] = {};
  int64_t stride[2][kMaxDims] = {};
};

enum BinaryCode : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

// c = a op b; a read at walk.stride[0], b at walk.stride[1], c written contiguously.
cudaError_t launch_binary(int code, const float *a, const float *b, float *c, const Walk &walk,
                          cudaStream_t stream);
// y = activation(x) (backends/common/activation_code.h; kNoActivation copies), x read at
// walk.stride[0], y written contiguously (y may be x where x is contiguous).
cudaError_t launch_unary(unsigned code, float alpha, float beta, const float *x, float *y,
                         const Walk &walk, cudaStream_t stream);
// y = x element by element (elements of 1, 2, 4 or 8 bytes), x read at walk.stride[0], y
// written at walk.stride[1] from element offset 0.
cudaError_t launch_strided_copy(int element_bytes, const void *x, void *y, const Walk &walk,
                                cudaStream_t stream);

// Softmax (or log-softmax) over `len` elements spaced `inner` apart, for rows = outer * inner.
cudaError_t launch_softmax(const float *x, float *y, int64_t rows, int64_t len, int64_t inner,
                           bool log, cudaStream_t stream);
// Layer normalization of `rows` contiguous rows of `len`: y = (x - mean) * inv_std * scale +
// bias (scale and bias strides 1 or 0; bias may be null); mean and inv_std (per row) written
// where not null.
cudaError_t launch_layer_norm(const float *x, const float *scale, int64_t scale_stride,
                              const float *bias, int64_t bias_stride, float *y, float *mean,
                              float *inv_std, int64_t rows, int64_t len, float epsilon,
                              cudaStream_t stream);

}  // namespace lumen::cuda
