// The CPU backend's only door to BLAS (OpenBLAS, Accelerate on macOS, or any CBLAS). Kernels call
// these wrappers instead of including <cblas.h>, so the vendor choice lives in blas.cc alone.
//
// Threading contract: BLAS runs single-threaded (set once on first use, for OpenBLAS). All
// parallelism comes from the runtime's ThreadPool, so the Runtime's thread count is respected and
// BLAS threads never oversubscribe the pool. parallel_gemm splits one GEMM over the pool; a call
// made from inside a parallel_for runs inline on the calling thread (the pool's nesting rule).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace lumen::blas {

// Row-major C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, on the calling thread.
// op(A) = A^T when trans_a (A is then stored [k, m]); likewise for B. Leading dimensions are in
// elements. m == 0 or n == 0 does nothing; k == 0 gives C = beta * C (zeros when beta == 0, even
// if C held NaN), without calling BLAS. Dimensions must fit BLAS's int; a lumen::Error otherwise.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc);

// The same GEMM, split into row (or column) blocks over `pool` when it is big enough to pay off.
// Same semantics as gemm(); the blocks write disjoint parts of C.
void parallel_gemm(ThreadPool &pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc);
void parallel_gemm(ThreadPool &pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   double alpha, const double *a, int64_t lda, const double *b, int64_t ldb,
                   double beta, double *c, int64_t ldc);

}  // namespace lumen::blas
