// Packing a 16-column B panel (the AVX2 micro-kernel's) from rows that lie anywhere (a conv's
// padded input shifted per kernel tap, see gemm/sgemm.h RowTableB) or a fixed stride apart (a
// row-major B): two loads and two aligned stores per step, where the generic path's memcpy call
// per 64-byte step cost more than the copy.
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_6x16__avx2.cc.
#if defined(__AVX2__)
#include <immintrin.h>

#include "backends/cpu/ukernels/avx2_vectors.h"

namespace lumen::ukernels {
namespace {

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
