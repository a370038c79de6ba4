// The CPU backend's only door to BLAS (OpenBLAS, Accelerate on macOS, or any CBLAS), used for
// float64 products (float32 runs on Lumen's own GEMM, gemm/sgemm.h). Kernels call this wrapper
// instead of including <cblas.h>, so the vendor choice lives in blas.cc alone.
//
// Threading contract: BLAS runs single-threaded (set once on first use, for OpenBLAS). All
// parallelism comes from the runtime's ThreadPool (callers split the product into blocks), so the
// Runtime's thread count is respected and BLAS threads never oversubscribe the pool.
#pragma once

#include <cstdint>

namespace lumen::blas {

// Row-major C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, on the calling thread.
// op(A) = A^T when trans_a (A is then stored [k, m]); likewise for B. Leading dimensions are in
// elements. m == 0 or n == 0 does nothing; k == 0 gives C = beta * C (zeros when beta == 0, even
// if C held NaN), without calling BLAS. Dimensions must fit BLAS's int; a lumen::Error otherwise.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc);

}  // namespace lumen::blas
