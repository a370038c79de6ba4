// Blocked pooling rows (f32_nchwc.h), AVX-512: two outputs of a block's 8 channels per 16-lane
// vector where their windows have the same taps (all but the edge columns), one output at a time
// elsewhere; one max or add per window tap, NaN tracked in a mask by an unordered compare (maxps
// drops a NaN in its first operand).
#include "backends/cpu/ukernels/f32_nchwc.h"

#if defined(__AVX512F__)
#include <limits>

#include "backends/cpu/ukernels/avx512_halves.h"

namespace lumen::ukernels {
namespace {

constexpr int kLanes = kNchwcBlock;

// Outputs j and j + 1 (Pair) or j alone of row i.
template <bool Pair>
inline void pool_outputs(const NchwcPool &p, int64_t i, int64_t j, float *out) {
  const int64_t row_offset = i * p.sh - p.pt, c0 = j * p.sw - p.pl;
  const int64_t step = p.sw * kLanes;  // floats between the two outputs' windows
  const __mmask16 lanes = Pair ? 0xFFFF : 0x00FF;
  __m512 acc = _mm512_set1_ps(p.max ? -std::numeric_limits<float>::infinity() : 0.0f);
  __mmask16 bad = 0;
  for (int64_t a = p.row_lo[i]; a < p.row_hi[i]; ++a) {
    // Column c0 may lie in the padding; only the in-image taps are read.
    const float *row = p.x + ((row_offset + a * p.dh) * p.w + c0) * kLanes;
    for (int64_t b = p.col_lo[j]; b < p.col_hi[j]; ++b) {
      const float *at = row + b * p.dw * kLanes;
      __m512 v;
      if (!Pair)
        v = _mm512_castps256_ps512(_mm256_loadu_ps(at));
      else if (step == kLanes)
        v = _mm512_loadu_ps(at);
      else
        v = load_halves(at, step);
      if (p.max) {
        bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        acc = _mm512_max_ps(acc, v);
      } else {
        acc = _mm512_add_ps(acc, v);
      }
    }
  }
  if (p.max) {
    acc = _mm512_mask_mov_ps(acc, bad, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  } else {
    // The two outputs' divisors, one per half.
    const __m512 divisors =
        _mm512_mask_blend_ps(__mmask16(0xFF00), _mm512_set1_ps(p.row_div[i] * p.col_div[j]),
                             _mm512_set1_ps(p.row_div[i] * p.col_div[Pair ? j + 1 : j]));
    acc = _mm512_div_ps(acc, divisors);
  }
  _mm512_mask_storeu_ps(out + j * kLanes, lanes, acc);
}

}  // namespace

void f32_nchwc_pool_rows__avx512(const NchwcPool &p, int64_t row_begin, int64_t row_end) {
  for (int64_t i = row_begin; i < row_end; ++i) {
    float *out = p.y + i * p.ow * kLanes;
    int64_t j = 0;
    while (j < p.ow) {
      // A pair where both windows keep the same taps: the second's window is the first's moved
      // by one stride.
      if (j + 1 < p.ow && p.col_lo[j] == p.col_lo[j + 1] && p.col_hi[j] == p.col_hi[j + 1]) {
        pool_outputs<true>(p, i, j, out);
        j += 2;
      } else {
        pool_outputs<false>(p, i, j, out);
        j += 1;
      }
    }
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
