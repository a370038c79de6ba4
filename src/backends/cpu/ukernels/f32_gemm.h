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
#pragma once

#include <cstdint>

namespace lumen::ukernels {

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate);
void f32_gemm_12x32__avx512_in_place(int64_t k, const float *a, const float *b,
                                     const int64_t *b_rows, float *c, int64_t ldc, int m, int n,
                                     bool accumulate);
void f32_gemm_6x16__avx2(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                         int n, bool accumulate);
void f32_gemm_4x8__portable(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate);

}  // namespace lumen::ukernels
