// The CUDA kernels' launchers (*.cu, compiled by nvcc): plain values in, the launch's error out.
// The kernels' registered functions (*.cc) work out shapes and strides and call these.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/common/pool_window.h"

namespace lumen::cuda {

inline constexpr int kMaxDims = 8;

// An element-wise walk over the output's elements in row-major order: `rank` dims of `shape`,
// each of up to three operands read at its own element strides (0 where it is broadcast).
struct Walk {
  int rank = 0;
  int64_t count = 1;
  int64_t shape[kMaxDims] = {};
  int64_t stride[3][kMaxDims] = {};
};

enum BinaryCode : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

// c = a op b; a read at walk.stride[0], b at walk.stride[1], c written contiguously.
cudaError_t launch_binary(int code, const float *a, const float *b, float *c, const Walk &walk,
                          cudaStream_t stream);
// y = activation(x) (backends/common/activation_code.h; kNoActivation copies), x read at
// walk.stride[0], y written contiguously (y may be x where x is contiguous).
cudaError_t launch_unary(unsigned code, float alpha, float beta, const float *x, float *y,
                         const Walk &walk, cudaStream_t stream);
// A fused element-wise chain (fused_elementwise) over n elements: the running value starts at
// operand 0 (or, where `continues`, at y: a chain longer than one launch holds) and each step
// applies an activation (code < kFusedBinary: activation_code.h, with alpha and beta) or a
// binary op (kFusedBinary + BinaryCode) with operand slot `operand`, the running value on the
// right where `running_right`. Operands hold n elements, or one where `scalar`.
inline constexpr int kMaxFusedSteps = 32, kMaxFusedOperands = 8, kFusedBinary = 64;
struct FusedProgram {
  int steps = 0;
  bool continues = false;
  int code[kMaxFusedSteps] = {};
  int operand[kMaxFusedSteps] = {};
  bool running_right[kMaxFusedSteps] = {};
  float alpha[kMaxFusedSteps] = {}, beta[kMaxFusedSteps] = {};
  const float *operands[kMaxFusedOperands] = {};
  bool scalar[kMaxFusedOperands] = {};
};
cudaError_t launch_fused_elementwise(const FusedProgram &program, float *y, int64_t n,
                                     cudaStream_t stream);

// y = x element by element (elements of 1, 2, 4 or 8 bytes), x read at walk.stride[0], y
// written at walk.stride[1] from element offset 0.
cudaError_t launch_strided_copy(int element_bytes, const void *x, void *y, const Walk &walk,
                                cudaStream_t stream);

// Element types of the kernels that take several (cast, where, comparisons).
enum ElementType : int { kF32, kF16, kBF16, kF64, kI8, kI32, kI64, kU8, kBool };
// y = x converted (Lumen's rules: float to integer truncates and saturates, NaN gives 0; to bool
// is != 0; to float16/bfloat16 rounds to nearest even); both contiguous, n elements.
cudaError_t launch_cast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t stream);
// y = cond ? a : b over the walk (cond at stride[0], a at [1], b at [2]), elements of 1 to 8
// bytes, y contiguous.
cudaError_t launch_where(int element_bytes, const bool *cond, const void *a, const void *b, void *y,
                         const Walk &walk, cudaStream_t stream);
enum CompareCode : int { kEqual, kLess, kGreater, kLessEqual, kGreaterEqual };
// y (bool) = a op b over the walk (a at stride[0], b at [1]), for float32, int32 or int64.
cudaError_t launch_compare(int code, int type, const void *a, const void *b, bool *y,
                           const Walk &walk, cudaStream_t stream);

// Softmax (or log-softmax) over `len` elements spaced `inner` apart, for rows = outer * inner.
cudaError_t launch_softmax(const float *x, float *y, int64_t rows, int64_t len, int64_t inner,
                           bool log, cudaStream_t stream);
// Layer normalization of `rows` contiguous rows of `len`: y = (x - mean) * inv_std * scale +
// bias (scale and bias strides 1 or 0; bias may be null); mean and inv_std (per row) written
// where not null. `rms`: RMS normalization, the mean taken as 0.
cudaError_t launch_layer_norm(const float *x, const float *scale, int64_t scale_stride,
                              const float *bias, int64_t bias_stride, float *y, float *mean,
                              float *inv_std, int64_t rows, int64_t len, float epsilon, bool rms,
                              cudaStream_t stream);

// Local response normalization across channels: x [batch, C, plane], a window of `size`
// channels around each.
cudaError_t launch_lrn(const float *x, float *y, int64_t batch, int64_t C, int64_t plane,
                       int64_t size, float alpha, float beta, float bias, cudaStream_t stream);
// Every one of n elements of `element_bytes` (1 to 8) set to the bytes of `value`.
cudaError_t launch_fill(void *y, int64_t n, int element_bytes, uint64_t value, cudaStream_t stream);

// Convolution as im2col + GEMM: for `images` images from `first`, the columns of group `group`
// (rows (c, kh, kw) of the group's channels, columns (image, oh, ow)) into col, zero where the
// window reads padding. Any stride, dilation and padding.
struct ConvGeometry {
  int64_t C = 0, H = 0, W = 0, OH = 0, OW = 0, KH = 0, KW = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, groups = 1;
};
cudaError_t launch_im2col(const float *x, float *col, const ConvGeometry &g, int64_t first,
                          int64_t images, int64_t group, cudaStream_t stream);
// The same convolution computed directly, a thread per output element of N images of M channels:
// for depthwise and other narrow groups, where a GEMM per group would be mostly launch overhead.
cudaError_t launch_conv_direct(const float *x, const float *w, float *y, const ConvGeometry &g,
                               int64_t N, int64_t M, cudaStream_t stream);
// y[n, c, p] = activation(y + bias[c] + residual[n, c, p]) over `count` elements of C channels of
// `plane` elements; bias and residual may be null.
cudaError_t launch_channel_epilogue(float *y, const float *bias, const float *residual,
                                    int64_t count, int64_t C, int64_t plane, unsigned code,
                                    float alpha, float beta, cudaStream_t stream);

// 2-D pooling over the window's planes: max (mode 0) or average (mode 1).
cudaError_t launch_pool2d(const float *x, float *y, const PoolWindow &g, int mode,
                          cudaStream_t stream);

// One axis of a resize: y[a, o, i] = sum over k of weight[o][k] * x[a, index[o][k], i] (or the
// extrapolation value where the output position is extrapolated), the taps as int32 words
// [out_w][2 * taps + 1] (indices, float32 weight bits, extrapolated flag; resize_taps.h).
cudaError_t launch_resize_axis(const float *x, const int32_t *taps, float *y, int64_t outer,
                               int64_t in_w, int64_t out_w, int64_t inner, int64_t count,
                               float extrapolation, cudaStream_t stream);

// Reductions: output element i reads the elements at kept.stride[0] offsets (walk over the kept
// dims) plus reduced.stride[0] offsets (walk over the reduced dims); a block per output element.
enum ReduceKind : int {
  kReduceSum,
  kReduceMean,
  kReduceMax,
  kReduceMin,
  kReduceProd,
  kReduceL1,
  kReduceL2,
  kReduceLogSum,
  kReduceLogSumExp,
  kReduceSumSquare
};
cudaError_t launch_reduce(int kind, const float *x, float *y, const Walk &kept, const Walk &reduced,
                          cudaStream_t stream);

// Gather along an axis: y[o, i, k] = data[o, idx[i] (+ axis_len where negative), k], for
// elements of 1 to 8 bytes and int32 or int64 indices (checked on the host).
cudaError_t launch_gather(int element_bytes, const void *data, const void *indices,
                          bool indices_int64, void *y, int64_t outer, int64_t axis_len,
                          int64_t n_indices, int64_t inner, cudaStream_t stream);

// Scaled dot-product attention (ONNX Attention without a KV cache): a block per query row, the
// keys taken in chunks with a running softmax (no [Sq, Skv] matrix in memory). Element (b, h, s,
// d) of Q is at q[b * q_stride[0] + h * q_stride[1] + s * q_stride[2] + d] (K, V with their kv
// head h / (q_heads / kv_heads)); Y likewise. The mask (bool: attend where true; float: added) is
// right-aligned to [B, Hq, Sq, Skv] through mask_dims (1: broadcast), positions past its last
// dim masked.
struct AttentionParams {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, dk = 0, dv = 0;
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  float *y = nullptr;
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, y_stride[3] = {};
  const void *mask = nullptr;
  bool mask_bool = false;
  int64_t mask_dims[4] = {1, 1, 1, 1};
  float scale = 1, softcap = 0;
  bool causal = false;
  int64_t left_window = -1, right_window = -1;
};
inline constexpr int64_t kMaxAttentionValueSize = 1024;
cudaError_t launch_attention(const AttentionParams &p, cudaStream_t stream);

}  // namespace lumen::cuda
