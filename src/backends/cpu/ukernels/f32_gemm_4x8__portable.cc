// Portable 4 x 8 tile, written with the GCC/Clang vector extension so it compiles to the baseline
// SIMD of any target (SSE2 on x86-64, NEON on Arm). The fallback when the CPU has neither AVX2 nor
// AVX-512. 8 accumulators + 2 B vectors + 1 broadcast fit in 16 SIMD registers.
#include <cstring>

#include "backends/cpu/ukernels/f32_gemm.h"

namespace lumen::ukernels {
namespace {
using f32x4 = float __attribute__((vector_size(16)));
}

void f32_gemm_4x8__portable(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, TileStore store, const TileEpilogue *epilogue,
                            const GridColumns *grid, L2PrefetchShare next) {
  constexpr int kMr = 4, kNr = 8;
  f32x4 acc[kMr][2] = {};
  next.spread(k);
  for (int64_t p = 0; p < k; ++p, a += kMr, b += kNr) {
    next.step();
    f32x4 b0, b1;
    std::memcpy(&b0, b, sizeof(b0));
    std::memcpy(&b1, b + 4, sizeof(b1));
    for (int r = 0; r < kMr; ++r) {
      acc[r][0] += a[r] * b0;
      acc[r][1] += a[r] * b1;
    }
  }
  float tile[kMr][kNr];
  for (int r = 0; r < m; ++r) {
    std::memcpy(tile[r], &acc[r][0], sizeof(acc[r][0]));
    std::memcpy(tile[r] + 4, &acc[r][1], sizeof(acc[r][1]));
  }
  store_tile(tile[0], kNr, c, ldc, m, n, store, epilogue, grid);
}

}  // namespace lumen::ukernels
