// AVX2 helpers shared by the __avx2.cc kernels: lane masks for vmaskmovps loads (fast, unlike its
// stores on AMD CPUs, which the kernels avoid) and an 8x8 transpose for kernels that move data
// between planes and lane-minor layouts. Include only from files built with AVX2 enabled.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace lumen::ukernels {

// The vmaskmovps mask of lanes [0, count) of 8 (none at 0 or below, all from 8 on).
inline __m256i first_lanes8(int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 8))),
                            lane);
}

// The mask of lanes [begin, end) of 8.
inline __m256i lane_range8(int64_t begin, int64_t end) {
  return _mm256_andnot_si256(first_lanes8(begin), first_lanes8(end));
}

// dst[0, n) = the first n lanes of v, n < 8, without a masked store (microcoded on AMD) or a copy
// through memory (a library call for a few floats cost more than the whole block's products).
inline void store_first_lanes(float *dst, __m256 v, int64_t n) {
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(dst, part);
    part = _mm256_extractf128_ps(v, 1);
    dst += 4, n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64 *>(dst), part);
    part = _mm_movehl_ps(part, part);
    dst += 2, n -= 2;
  }
  if (n >= 1) _mm_store_ss(dst, part);
}

// In place: rows r[0..8) become columns.
inline void transpose8x8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Positions [0, count) of `lanes` ([count rounded up to 8][8], 32-byte aligned, position-major;
// what lies past count is never stored) into channel planes: channel l of position q goes to
// y[l * plane + q] for l < channels, clamped to [lo, hi] (NaN stays NaN). 8x8 transposes; the
// last positions are stored 4, 2 and 1 at a time.
inline void store_lanes_to_planes(const float *lanes, int64_t count, float *y, int64_t plane,
                                  int channels, __m256 lo, __m256 hi) {
  for (int64_t q = 0; q < count; q += 8) {
    __m256 v[8];
    for (int k = 0; k < 8; ++k) v[k] = _mm256_load_ps(lanes + (q + k) * 8);
    transpose8x8(v);
    const int64_t n = std::min<int64_t>(8, count - q);
    for (int l = 0; l < channels; ++l) {
      const __m256 x = _mm256_min_ps(hi, _mm256_max_ps(lo, v[l]));  // max(lo, NaN) is NaN
      if (n == 8)
        _mm256_storeu_ps(y + l * plane + q, x);
      else
        store_first_lanes(y + l * plane + q, x, n);
    }
  }
}

}  // namespace lumen::ukernels
