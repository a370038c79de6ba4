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

// The tile with kRows of the panel's 12 rows and kVectors 16-wide column vectors: edge tiles
// compute only what they need, which matters for narrow outputs (7x7 feature maps: 16 columns
// left) and for row counts that are not multiples of 12 (a 64-channel conv ends on 4 rows).
template <int kRows, int kVectors, class BSource>
void tile(int64_t k, const float *a, BSource b, float *c, int64_t ldc, int m, int n,
          bool accumulate, const TileEpilogue *epilogue) {
  constexpr int kPanelRows = 12;
  const auto lanes = [](int count) -> __mmask16 {
    return count >= 16  ? __mmask16(0xFFFF)
           : count <= 0 ? __mmask16(0)
                        : __mmask16((1u << count) - 1);
  };
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) mask[v] = lanes(n - 16 * v);
    // The C tile is read (or written) only after the k loop; asking for its lines now hides their
    // latency behind the loop (C is often far out of cache: a 4096 GEMM reloads 64 MiB of C per
    // depth block, and waiting for it cost ~12% of the time).
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v)
      if (r < m) _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + 16 * v), _MM_HINT_T0);
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p, a += kPanelRows) {
    __m512 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = b.load(p, v, mask[v]);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  __m512 col_bias[kVectors], lo = _mm512_setzero_ps(), hi = lo;
  for (int v = 0; v < kVectors; ++v) col_bias[v] = _mm512_setzero_ps();
  if (epilogue) {
    lo = _mm512_set1_ps(epilogue->lo), hi = _mm512_set1_ps(epilogue->hi);
    if (epilogue->col_bias)
      for (int v = 0; v < kVectors; ++v)
        col_bias[v] = _mm512_maskz_loadu_ps(mask[v], epilogue->col_bias + 16 * v);
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    if (r >= m) break;
    float *cr = c + r * ldc;
    for (int v = 0; v < kVectors; ++v) {
      __m512 out = acc[r][v];
      if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask[v], cr + 16 * v));
      if (epilogue) {
        // The additions in the unfused order, then x < lo ? lo : x and x > hi ? hi : x, which
        // leave NaN as it is.
        if (epilogue->row_bias) out = _mm512_add_ps(out, _mm512_set1_ps(epilogue->row_bias[r]));
        if (epilogue->col_bias) out = _mm512_add_ps(out, col_bias[v]);
        out = _mm512_mask_mov_ps(out, _mm512_cmp_ps_mask(out, lo, _CMP_LT_OQ), lo);
        out = _mm512_mask_mov_ps(out, _mm512_cmp_ps_mask(out, hi, _CMP_GT_OQ), hi);
      }
      _mm512_mask_storeu_ps(cr + 16 * v, mask[v], out);
    }
  }
}

template <class BSource>
void any_tile(int64_t k, const float *a, BSource b, float *c, int64_t ldc, int m, int n,
              bool accumulate, const TileEpilogue *e) {
  if (n <= 16) {
    if (m <= 4) return tile<4, 1>(k, a, b, c, ldc, m, n, accumulate, e);
    if (m <= 8) return tile<8, 1>(k, a, b, c, ldc, m, n, accumulate, e);
    return tile<12, 1>(k, a, b, c, ldc, m, n, accumulate, e);
  }
  if (m <= 4) return tile<4, 2>(k, a, b, c, ldc, m, n, accumulate, e);
  if (m <= 8) return tile<8, 2>(k, a, b, c, ldc, m, n, accumulate, e);
  tile<12, 2>(k, a, b, c, ldc, m, n, accumulate, e);
}

}  // namespace

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, bool accumulate, const TileEpilogue *epilogue) {
  any_tile(k, a, PackedPanel{b}, c, ldc, m, n, accumulate, epilogue);
}

void f32_gemm_12x32__avx512_in_place(int64_t k, const float *a, const float *b,
                                     const int64_t *b_rows, float *c, int64_t ldc, int m, int n,
                                     bool accumulate, const TileEpilogue *epilogue) {
  any_tile(k, a, RowsInPlace{b, b_rows}, c, ldc, m, n, accumulate, epilogue);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
