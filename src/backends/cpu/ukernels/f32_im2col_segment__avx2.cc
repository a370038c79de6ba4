// One run of an im2col panel row with AVX2: masked loads (never reading outside [lo, hi)) and
// plain stores that may run past the segment into the rest of the panel row (`room` floats are
// writable from out; what lands past count is overwritten by the next segment or the row's zero
// tail), so a segment is a few vector moves instead of a scalar loop.
#include "backends/cpu/ukernels/f32_im2col.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_6x16__avx2.cc.
#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/ukernels/avx2_vectors.h"

namespace lumen::ukernels {
namespace {

// Stores lanes [0, count) of v at out (count <= 8), and up to `room` floats.
inline void store_run(float *out, int64_t count, int64_t room, __m256 v) {
  if (room >= 8) return _mm256_storeu_ps(out, v);
  alignas(32) float buf[8];
  _mm256_store_ps(buf, v);
  std::copy(buf, buf + std::min<int64_t>(count, 8), out);
}

}  // namespace

void f32_im2col_segment__avx2(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                              int room, float *out) {
  // row[ix0] as an integer: ix0 may be negative (left padding), and those lanes are masked off.
  const uintptr_t base = reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(ix0) * 4;
  for (int v = 0; v < count; v += 8) {
    const __m256 values = _mm256_maskload_ps(reinterpret_cast<const float *>(base + v * 4),
                                             lane_range8(lo - v, hi - v));
    store_run(out + v, count - v, room - v, values);
  }
}

void f32_im2col_segment_s2__avx2(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                                 int room, float *out) {
  // Output lane j reads row[ix0 + 2j]: 8 outputs come from 16 consecutive floats, loaded as two
  // vectors with only the even lanes the valid outputs need, then packed by two shuffles.
  const uintptr_t base = reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(ix0) * 4;
  const __m256i even = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);  // output lane of each input lane
  const __m256i is_even = _mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0);
  for (int v = 0; v < count; v += 8) {
    const float *src = reinterpret_cast<const float *>(base + 2 * v * 4);
    // Input lane i of the first vector is output lane i / 2, of the second 4 + i / 2.
    const __m256i b = _mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(lo - v, 0, 8)));
    const __m256i e = _mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(hi - v, 0, 8)));
    const auto valid = [&](__m256i out_lane) {
      return _mm256_and_si256(is_even, _mm256_andnot_si256(_mm256_cmpgt_epi32(b, out_lane),
                                                           _mm256_cmpgt_epi32(e, out_lane)));
    };
    const __m256 first = _mm256_maskload_ps(src, valid(even));
    const __m256 second =
        _mm256_maskload_ps(src + 8, valid(_mm256_add_epi32(even, _mm256_set1_epi32(4))));
    // [f0 f2 s0 s2 | f4 f6 s4 s6] -> [f0 f2 f4 f6 s0 s2 s4 s6]
    const __m256 packed = _mm256_shuffle_ps(first, second, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 ordered =
        _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(packed), _MM_SHUFFLE(3, 1, 2, 0)));
    store_run(out + v, count - v, room - v, ordered);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
