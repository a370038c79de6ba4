// Single-precision GEMM micro-kernels: one MR x NR tile of C from packed panels.
//
//   c[i, j] (+)= sum_p a[p * MR + i] * b[p * NR + j]   for i < m <= MR, j < n <= NR, p < k
//
// `a` is an A panel (k steps of MR values, rows past m zero-padded), `b` a B panel (k steps of NR
// values, columns past n zero-padded); both 64-byte aligned. C is row-major with leading
// dimension ldc; only its first m rows and n columns are touched. With accumulate the tile is
// added to C, otherwise it overwrites C. One file per instruction set, compiled with that ISA's
// flags (see CMakeLists.txt); the GEMM driver picks one at run time from the CPU's features.
//
// The _in_place variants read B where it lies instead of from a packed panel: row p of B starts
// at b + b_rows[p] (any alignment), columns contiguous; columns past n are not read.
//
// With an epilogue (the last depth block of a fused op), each stored value becomes
// clamp(c + row_bias[i] + col_bias[j], lo, hi) while the tile is still in registers: bias plus
// relu, clip or no activation, without another pass over C.
#pragma once

#include <cstdint>

namespace lumen::ukernels {

struct TileEpilogue {
  const float *row_bias;  // this tile's first row's bias, or nullptr
  const float *col_bias;  // this tile's first column's bias, or nullptr
  float lo, hi;           // clamp bounds (-inf, inf for none); NaN stays NaN
};

// The epilogue over a stored m x n tile, for kernels that do not apply it in registers.
inline void apply_tile_epilogue(const TileEpilogue &e, float *c, int64_t ldc, int m, int n) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float v = c[i * ldc + j];
      if (e.row_bias) v += e.row_bias[i];
      if (e.col_bias) v += e.col_bias[j];
      v = v < e.lo ? e.lo : v;
      c[i * ldc + j] = v > e.hi ? e.hi : v;
    }
}

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate, const TileEpilogue *epilogue);
void f32_gemm_12x32__avx512_in_place(int64_t k, const float *a, const float *b,
                                     const int64_t *b_rows, float *c, int64_t ldc, int m, int n,
                                     bool accumulate, const TileEpilogue *epilogue);
void f32_gemm_6x16__avx2(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                         int n, bool accumulate, const TileEpilogue *epilogue);
void f32_gemm_4x8__portable(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate, const TileEpilogue *epilogue);

}  // namespace lumen::ukernels
