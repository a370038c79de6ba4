// Packing a 16-column B panel (the AVX2 micro-kernel's) from rows that lie anywhere (a conv's
// padded input shifted per kernel tap, see gemm/sgemm.h RowTableB) or a fixed stride apart (a
// row-major B): two loads and two aligned stores per step, where the generic path's memcpy call
// per 64-byte step cost more than the copy.
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_6x16__avx2.cc.
#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>

namespace lumen::ukernels {
namespace {

// The mask of a vector's first `count` lanes, for vmaskmovps loads (fast, unlike its stores on
// AMD CPUs); lanes masked off are never read.
inline __m256i first_lanes8(int count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::clamp(count, 0, 8)), lane);
}

// One panel step: the row's first 16 columns (`cols` of them, zeros past), in two stores.
struct Step16 {
  __m256i low, high;
  bool whole;
  explicit Step16(int cols)
      : low(first_lanes8(cols)), high(first_lanes8(cols - 8)), whole(cols >= 16) {}
  void operator()(const float *row, float *dst) const {
    if (whole) {
      _mm256_store_ps(dst, _mm256_loadu_ps(row));
      _mm256_store_ps(dst + 8, _mm256_loadu_ps(row + 8));
    } else {
      _mm256_store_ps(dst, _mm256_maskload_ps(row, low));
      _mm256_store_ps(dst + 8, _mm256_maskload_ps(row + 8, high));
    }
  }
};

}  // namespace

void f32_pack_row_table_16__avx2(const float *base, const int64_t *row_offsets, int64_t kc,
                                 int cols, float *dst) {
  const Step16 step(cols);
  for (int64_t p = 0; p < kc; ++p, dst += 16) step(base + row_offsets[p], dst);
}

void f32_pack_strided_rows_16__avx2(const float *src, int64_t ld, int64_t kc, int cols,
                                    float *dst) {
  const Step16 step(cols);
  for (int64_t p = 0; p < kc; ++p, dst += 16, src += ld) step(src, dst);
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
