// 6 x 16 tile: 12 ymm accumulators, two B vectors and one broadcast A value per step.

#include <algorithm>

#include "backends/cpu/ukernels/f32_gemm.h"

// Built with this ISA's flags on x86-64 only; elsewhere the file is empty and the table in
// gemm/microkernel.cc never offers the kernel (its CPU check fails).
#if defined(__AVX2__)
#include <immintrin.h>

namespace lumen::ukernels {

void f32_gemm_6x16__avx2(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                         int n, bool accumulate, const TileEpilogue *epilogue,
                         const GridColumns *grid) {
  constexpr int kMr = 6, kNr = 16;
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p, a += kMr, b += kNr) {
    // Constant weights stream from memory as A or B: ask for both ahead, as the AVX-512 kernel
    // does (see there).
    _mm_prefetch(reinterpret_cast<const char *>(a + 128 * kMr), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(b + 64 * kNr), _MM_HINT_T0);
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  if (n == kNr && !epilogue && !grid) {
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      if (r >= m) break;
      float *cr = c + r * ldc;
      __m256 v0 = acc[r][0], v1 = acc[r][1];
      if (accumulate) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(cr));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(cr + 8));
      }
      _mm256_storeu_ps(cr, v0);
      _mm256_storeu_ps(cr + 8, v1);
    }
    return;
  }
  // A partial tile, an epilogue or grid columns: through a buffer.
  alignas(32) float tile[kMr][kNr];
  for (int r = 0; r < m; ++r) {
    _mm256_store_ps(tile[r], acc[r][0]);
    _mm256_store_ps(tile[r] + 8, acc[r][1]);
  }
  store_tile(tile[0], kNr, c, ldc, m, n, accumulate, epilogue, grid);
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
