// Portable 4 x 16 tile in plain C++; the compiler vectorizes the column loops for the baseline
// instruction set. The fallback when the CPU has neither AVX2 nor AVX-512.
#include "backends/cpu/ukernels/f32_gemm.h"

namespace lumen::ukernels {

void f32_gemm_4x16__portable(int64_t k, const float *a, const float *b, float *c, int64_t ldc,
                             int m, int n, bool accumulate) {
  constexpr int kMr = 4, kNr = 16;
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < k; ++p, a += kMr, b += kNr)
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) acc[r][j] += a[r] * b[j];
  for (int r = 0; r < m; ++r) {
    float *cr = c + r * ldc;
    for (int j = 0; j < n; ++j) cr[j] = accumulate ? cr[j] + acc[r][j] : acc[r][j];
  }
}

}  // namespace lumen::ukernels
