// BLAS dispatch: the one file that includes the vendor header.
#include "backends/cpu/blas.h"

#include <algorithm>
#include <limits>
#include <mutex>

#include "lumen/error.h"

#if defined(LUMEN_BLAS_ACCELERATE)
#include <Accelerate/Accelerate.h>
#else
#include <cblas.h>
#endif

#if defined(LUMEN_BLAS_OPENBLAS)
// Declared by OpenBLAS's cblas.h; repeated in case another CBLAS header was found first.
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace lumen::blas {
namespace {

// The pool provides the parallelism; BLAS's own threads would compete with it.
void init_once() {
  static std::once_flag flag;
  std::call_once(flag, [] {
#if defined(LUMEN_BLAS_OPENBLAS)
    openblas_set_num_threads(1);
#endif
  });
}

void check_fits(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    if (v < 0 || v > kMax)
      fail("gemm: dimension ", v, " is out of BLAS's range (m=", m, ", n=", n, ", k=", k,
           ", lda=", lda, ", ldb=", ldb, ", ldc=", ldc, ")");
}

// k == 0: no products, C = beta * C. Zero is written, not multiplied, so NaN in C does not leak.
template <class T>
void scale_c(int64_t m, int64_t n, T beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T *row = c + i * ldc;
    if (beta == T(0))
      std::fill(row, row + n, T(0));
    else if (beta != T(1))
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
}

inline CBLAS_TRANSPOSE trans(bool t) {
  return t ? CblasTrans : CblasNoTrans;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) return scale_c(m, n, beta, c, ldc);
  check_fits(m, n, k, lda, ldb, ldc);
  init_once();
  cblas_dgemm(CblasRowMajor, trans(trans_a), trans(trans_b), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

}  // namespace lumen::blas
