// Packing a 32-column B panel from rows that lie anywhere (a conv's padded input shifted per kernel
// tap, see gemm/sgemm.h RowTableB) or a fixed stride apart (a row-major B): two masked loads and
// two aligned stores per step, where a memcpy call per step cost more than the copy (4% of
// SqueezeNet's time went to memmove).
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_12x32__avx512.cc.
#if defined(__AVX512F__)
#include <immintrin.h>

#include "backends/cpu/ukernels/avx512_lanes.h"

namespace lumen::ukernels {
namespace {

// One panel step: the row's first 32 columns under the masks, zeros in the other lanes.
inline void pack_step(const float *row, __mmask16 low, __mmask16 high, float *dst) {
  _mm512_store_ps(dst, _mm512_maskz_loadu_ps(low, row));
  _mm512_store_ps(dst + 16, _mm512_maskz_loadu_ps(high, row + 16));
}

}  // namespace

void f32_pack_row_table_32__avx512(const float *base, const int64_t *row_offsets, int64_t kc,
                                   int cols, float *dst) {
  const __mmask16 low = first_lanes(cols), high = first_lanes(cols - 16);
  for (int64_t p = 0; p < kc; ++p, dst += 32) pack_step(base + row_offsets[p], low, high, dst);
}

void f32_pack_strided_rows_32__avx512(const float *src, int64_t ld, int64_t kc, int cols,
                                      float *dst) {
  const __mmask16 low = first_lanes(cols), high = first_lanes(cols - 16);
  for (int64_t p = 0; p < kc; ++p, dst += 32, src += ld) pack_step(src, low, high, dst);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
