// 12 x 32 tile: 24 zmm accumulators, two B vectors and one broadcast A value per step, so the
// two FMA ports stay busy while loads stay under two per cycle.

#include "backends/cpu/ukernels/f32_gemm.h"

// Built with this ISA's flags on x86-64 only; elsewhere the file is empty and the table in
// gemm/microkernel.cc never offers the kernel (its CPU check fails).
#if defined(__AVX512F__)
#include <immintrin.h>

namespace lumen::ukernels {
namespace {

// Where the B vectors of step p come from: a packed panel (NR floats per step), or a row of B
// read in place at b + rows[p] (a conv's padded input, shifted per kernel tap), loaded with the
// edge tile's column mask so nothing past the last column is read.
struct PackedPanel {
  const float *b;
  __m512 load(int64_t p, int v, __mmask16) const { return _mm512_load_ps(b + p * 32 + 16 * v); }
};
struct RowsInPlace {
  const float *b;
  const int64_t *rows;
  __m512 load(int64_t p, int v, __mmask16 mask) const {
    return _mm512_maskz_loadu_ps(mask, b + rows[p] + 16 * v);
  }
};

// The tile with kVectors 16-wide column vectors: 2 for full tiles, 1 when at most 16 columns are
// left (the edge of a narrow output, e.g. 7x7 feature maps), which halves the work there.
template <int kVectors, class BSource>
void tile(int64_t k, const float *a, BSource b, float *c, int64_t ldc, int m, int n,
          bool accumulate) {
  constexpr int kMr = 12;
  const auto lanes = [](int count) -> __mmask16 {
    return count >= 16  ? __mmask16(0xFFFF)
           : count <= 0 ? __mmask16(0)
                        : __mmask16((1u << count) - 1);
  };
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) mask[v] = lanes(n - 16 * v);
  __m512 acc[kMr][kVectors];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r)
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p, a += kMr) {
    __m512 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = b.load(p, v, mask[v]);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    if (r >= m) break;
    float *cr = c + r * ldc;
    for (int v = 0; v < kVectors; ++v) {
      __m512 out = acc[r][v];
      if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask[v], cr + 16 * v));
      _mm512_mask_storeu_ps(cr + 16 * v, mask[v], out);
    }
  }
}

}  // namespace

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate) {
  if (n <= 16)
    tile<1>(k, a, PackedPanel{b}, c, ldc, m, n, accumulate);
  else
    tile<2>(k, a, PackedPanel{b}, c, ldc, m, n, accumulate);
}

void f32_gemm_12x32__avx512_in_place(int64_t k, const float *a, const float *b,
                                     const int64_t *b_rows, float *c, int64_t ldc, int m, int n,
                                     bool accumulate) {
  if (n <= 16)
    tile<1>(k, a, RowsInPlace{b, b_rows}, c, ldc, m, n, accumulate);
  else
    tile<2>(k, a, RowsInPlace{b, b_rows}, c, ldc, m, n, accumulate);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
