// Single-precision GEMM micro-kernels: one MR x NR tile of C from packed panels.
//
//   c[i, j] (+)= sum_p a[p * MR + i] * b[p * NR + j]   for i < m <= MR, j < n <= NR, p < k
//
// `a` is an A panel (k steps of MR values, rows past m zero-padded), `b` a B panel (k steps of NR
// values, columns past n zero-padded); both 64-byte aligned. C is row-major with leading
// dimension ldc; only its first m rows and n columns are touched. The tile overwrites C, is added
// to it, or overwrites it with streaming stores (TileStore). One file per instruction set, compiled
// with that ISA's flags (see CMakeLists.txt); the GEMM driver picks one at run time from the CPU's
// features.
//
// With an epilogue (the last depth block of a fused op), each stored value becomes
// clamp(c + row_bias[i] + col_bias[j] + residual[i, j], lo, hi) while the tile is still in
// registers: bias, a residual (ResNet's skip connection) and relu, clip or no activation, without
// another pass over C. The residual is laid out like C (same ldc, same grid columns).
//
// With grid columns (a conv computed on its padded grid, kernels/padded_image.h), column j of the
// tile is GEMM column t = col0 + j, output (t / wp, t % wp) of a grid wp wide: columns with
// t % wp >= width are dropped and the others stored packed, `width` to a row, at
// c[(t / wp) * width + t % wp], c pointing at the tile's first row of C. The conv then writes its
// output planes directly, no scratch grid to copy from.
#pragma once

#include <cstdint>

#include "backends/cpu/ukernels/l2_prefetch_share.h"

namespace lumen::ukernels {

enum class TileStore : unsigned char {
  kOverwrite,
  kAccumulate,
  // Overwrite, with non-temporal stores where the kernel can (whole tiles whose rows are aligned
  // vectors): for a C written once and larger than the caches. Each store then skips the read of
  // its line and does not push what the caches hold out to memory; the GEMM driver fences them
  // (stream_fence) before anyone reads C.
  kStream,
};

struct TileEpilogue {
  const float *row_bias;            // this tile's first row's bias, or nullptr
  const float *col_bias;            // this tile's first column's bias, or nullptr
  float lo, hi;                     // clamp bounds (-inf, inf for none); NaN stays NaN
  const float *residual = nullptr;  // where this tile's first row would be in C, or nullptr
};

// What a kernel derived from the last tile's grid columns, kept by the GEMM driver for the tiles
// of one thread's region (they walk each column tile's row panels one after another), so the
// kernel neither recomputes it nor looks it up in thread-local storage (__tls_get_addr was 10% of
// a first conv's time). The kernel owns the layout of `data`.
struct GridLaneCache {
  int64_t col0 = -1, wp = 0, width = 0;
  int n = -1;
  alignas(64) unsigned char data[1024];
};

struct GridColumns {
  int64_t wp, width;  // grid row length, and the columns of each grid row that are kept
  int64_t col0;       // GEMM column of the tile's first column
  GridLaneCache *cache = nullptr;  // the driver's, or nullptr
};

// Where column j of the tile lands in a row of C (see above), or nullptr if it is dropped.
inline float *grid_column(float *c_row, const GridColumns &g, int64_t j) {
  const int64_t t = g.col0 + j, col = t % g.wp;
  return col < g.width ? c_row + (t / g.wp) * g.width + col : nullptr;
}

// How many kept columns come before GEMM column t: where t lands in a row of C if it is kept; grid
// columns [t0, t1) land on kept_before(t1) - kept_before(t0) contiguous floats from there.
inline int64_t kept_before(const GridColumns &g, int64_t t) {
  const int64_t col = t % g.wp;
  return (t / g.wp) * g.width + (col < g.width ? col : g.width);
}

// Stores an m x n tile computed into `tile` (row stride tile_ld) into C, with accumulate, the
// epilogue and grid columns as above (streaming stores as plain ones): for kernels (and tiles) that
// do not do it in registers.
inline void store_tile(const float *tile, int64_t tile_ld, float *c, int64_t ldc, int m, int n,
                       TileStore store, const TileEpilogue *e, const GridColumns *grid) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float *dst = grid ? grid_column(c + i * ldc, *grid, j) : c + i * ldc + j;
      if (!dst) continue;
      float v = tile[i * tile_ld + j];
      if (store == TileStore::kAccumulate) v = *dst + v;
      if (e) {
        if (e->row_bias) v += e->row_bias[i];
        if (e->col_bias) v += e->col_bias[j];
        if (e->residual) v += e->residual[dst - c];
        v = v < e->lo ? e->lo : v;
        v = v > e->hi ? e->hi : v;
      }
      *dst = v;
    }
}

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, TileStore store, const TileEpilogue *epilogue,
                            const GridColumns *grid, L2PrefetchShare next);
void f32_gemm_6x16__avx2(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                         int n, TileStore store, const TileEpilogue *epilogue,
                         const GridColumns *grid, L2PrefetchShare next);
void f32_gemm_4x8__portable(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, TileStore store, const TileEpilogue *epilogue,
                            const GridColumns *grid, L2PrefetchShare next);

}  // namespace lumen::ukernels
