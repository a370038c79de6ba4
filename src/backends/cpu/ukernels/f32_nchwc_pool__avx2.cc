// Blocked pooling rows (f32_nchwc.h), AVX2: a block's 8 channels per vector, one max or add per
// window tap; NaN is tracked by an unordered compare, since maxps drops a NaN in its first operand.
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace lumen::ukernels {

void f32_nchwc_pool_rows__avx2(const NchwcPool &p, int64_t row_begin, int64_t row_end) {
  const __m256 nan = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t row_offset = i * p.sh - p.pt;
    const int64_t a_lo = p.row_lo[i], a_hi = p.row_hi[i];
    float *out = p.y + i * p.ow * kNchwcBlock;
    for (int64_t j = 0; j < p.ow; ++j) {
      __m256 acc = _mm256_set1_ps(p.max ? -std::numeric_limits<float>::infinity() : 0.0f);
      __m256 bad = _mm256_setzero_ps();
      const int64_t c0 = j * p.sw - p.pl;
      for (int64_t a = a_lo; a < a_hi; ++a) {
        // Column c0 may lie in the padding; only the in-image taps are read.
        const int64_t row = ((row_offset + a * p.dh) * p.w + c0) * kNchwcBlock;
        for (int64_t b = p.col_lo[j]; b < p.col_hi[j]; ++b) {
          const __m256 v = _mm256_loadu_ps(p.x + (row + b * p.dw * kNchwcBlock));
          if (p.max) {
            bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            acc = _mm256_max_ps(acc, v);
          } else {
            acc = _mm256_add_ps(acc, v);
          }
        }
      }
      if (p.max)
        acc = _mm256_blendv_ps(acc, nan, bad);
      else
        acc = _mm256_div_ps(acc, _mm256_set1_ps(p.row_div[i] * p.col_div[j]));
      _mm256_storeu_ps(out + j * kNchwcBlock, acc);
    }
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
