// One run of an im2col panel row with masked loads and stores: a 14-wide segment (a 14x14 feature
// map) is one load and one store instead of a vectorized loop's prologue, body and tail.
#include "backends/cpu/ukernels/f32_im2col.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_12x32__avx512.cc.
#if defined(__AVX512F__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace lumen::ukernels {
namespace {

// Lanes [begin, end) of 16.
__mmask16 lane_range(int64_t begin, int64_t end) {
  begin = std::clamp<int64_t>(begin, 0, 16);
  end = std::clamp<int64_t>(end, begin, 16);
  const uint32_t below_end = (1u << end) - 1, below_begin = (1u << begin) - 1;
  return static_cast<__mmask16>(below_end & ~below_begin);
}

// The even bits of a 16-bit mask whose low 8 bits are `m`: bit j of m moves to bit 2j.
__mmask16 spread_even(uint32_t m) {
  m &= 0xFF;
  m = (m | (m << 4)) & 0x0F0F;
  m = (m | (m << 2)) & 0x3333;
  m = (m | (m << 1)) & 0x5555;
  return static_cast<__mmask16>(m);
}

}  // namespace

void f32_im2col_segment_s2__avx512(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                                   float *out) {
  // Output lane j reads row[ix0 + 2j]: 16 outputs come from 32 consecutive floats, loaded as two
  // vectors with only the even lanes the valid outputs need, then packed by one permute.
  const uintptr_t base = reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(ix0) * 4;
  const __m512i evens =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int v = 0; v < count; v += 16) {
    const uint32_t valid = lane_range(lo - v, hi - v);
    const float *src = reinterpret_cast<const float *>(base + 2 * v * 4);
    const __m512 first = _mm512_maskz_loadu_ps(spread_even(valid), src);
    const __m512 second = _mm512_maskz_loadu_ps(spread_even(valid >> 8), src + 16);
    _mm512_mask_storeu_ps(out + v, lane_range(0, count - v),
                          _mm512_permutex2var_ps(first, evens, second));
  }
}

void f32_im2col_segment__avx512(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                                float *out) {
  // The address of row[ix0] as an integer: ix0 may be negative (left padding), and those lanes
  // are masked off, so nothing before the row is touched.
  const uintptr_t base = reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(ix0) * 4;
  for (int v = 0; v < count; v += 16) {
    const __m512 values = _mm512_maskz_loadu_ps(lane_range(lo - v, hi - v),
                                                reinterpret_cast<const float *>(base + v * 4));
    _mm512_mask_storeu_ps(out + v, lane_range(0, count - v), values);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
