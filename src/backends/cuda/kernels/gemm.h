// Products of row-major matrices on cuBLASLt, for MatMul/Gemm and convolution (im2col + GEMM).
#pragma once

#include <cstdint>

#include "core/kernel.h"

namespace lumen::cuda {

// A batch of C = alpha * op(A) op(B) + beta * C, C [M, N] row-major (rows N apart); batch
// strides in elements (0: the same matrix for every product; c_stride 0: M * N).
struct Product {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0, batch = 1;
  const float *a = nullptr, *b = nullptr;
  float *c = nullptr;
  int64_t a_stride = 0, b_stride = 0, c_stride = 0;
  float alpha = 1, beta = 0;
  bool relu = false;  // in cuBLASLt's epilogue
};

// Queues the products on the kernel's stream (K = 0: C = beta * C, as ONNX says).
void run_product(KernelContext &ctx, const Product &p);

}  // namespace lumen::cuda
