// The plane-by-plane 3x3 depthwise loops (f32_depthwise.h) for AVX2: the nine weights and the
// bias stay in registers and two vectors of outputs are summed at a time, as two independent
// chains, clamped as they are stored (relu, relu6: no epilogue call per row). Compiled inside the
// depthwise conv's parallel loop instead, the compiler spilled the weights and row pointers to the
// stack and reloaded them every iteration (most of the time on 56x56 planes).
#include "backends/cpu/ukernels/f32_depthwise.h"

// Built with this ISA's flags on x86-64 only; elsewhere the caller never runs it (CPU check).
#if defined(__AVX2__)
#include <immintrin.h>

namespace lumen::ukernels {
namespace {

struct Weights3x3 {
  __m256 k[9], bias, lo, hi;
  Weights3x3(const float *w, float b, float low, float high) {
    for (int i = 0; i < 9; ++i) k[i] = _mm256_set1_ps(w[i]);
    bias = _mm256_set1_ps(b);
    lo = _mm256_set1_ps(low), hi = _mm256_set1_ps(high);
  }
  // max(lo, NaN) and min(hi, NaN) are NaN.
  __m256 clamp(__m256 v) const { return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); }
};

inline float clamp(float v, float lo, float hi) {
  v = v < lo ? lo : v;  // comparisons keep NaN
  return v > hi ? hi : v;
}

// One vector of outputs from three rows, each read at columns +0, +1, +2 from (tap row a).
inline __m256 sum_s1(const Weights3x3 &w, const float *r0, const float *r1, const float *r2) {
  __m256 a = _mm256_fmadd_ps(w.k[0], _mm256_loadu_ps(r0), w.bias);
  __m256 b = _mm256_mul_ps(w.k[1], _mm256_loadu_ps(r0 + 1));
  a = _mm256_fmadd_ps(w.k[2], _mm256_loadu_ps(r0 + 2), a);
  b = _mm256_fmadd_ps(w.k[3], _mm256_loadu_ps(r1), b);
  a = _mm256_fmadd_ps(w.k[4], _mm256_loadu_ps(r1 + 1), a);
  b = _mm256_fmadd_ps(w.k[5], _mm256_loadu_ps(r1 + 2), b);
  a = _mm256_fmadd_ps(w.k[6], _mm256_loadu_ps(r2), a);
  b = _mm256_fmadd_ps(w.k[7], _mm256_loadu_ps(r2 + 1), b);
  a = _mm256_fmadd_ps(w.k[8], _mm256_loadu_ps(r2 + 2), a);
  return w.clamp(_mm256_add_ps(a, b));
}

// The same for stride 2 over the parity planes: ee/eo/oe/oo at row i, ee1/eo1 at row i + 1.
inline __m256 sum_s2(const Weights3x3 &w, const float *ee, const float *eo, const float *oe,
                     const float *oo, const float *ee1, const float *eo1) {
  __m256 a = _mm256_fmadd_ps(w.k[0], _mm256_loadu_ps(ee), w.bias);
  __m256 b = _mm256_mul_ps(w.k[1], _mm256_loadu_ps(eo));
  a = _mm256_fmadd_ps(w.k[2], _mm256_loadu_ps(ee + 1), a);
  b = _mm256_fmadd_ps(w.k[3], _mm256_loadu_ps(oe), b);
  a = _mm256_fmadd_ps(w.k[4], _mm256_loadu_ps(oo), a);
  b = _mm256_fmadd_ps(w.k[5], _mm256_loadu_ps(oe + 1), b);
  a = _mm256_fmadd_ps(w.k[6], _mm256_loadu_ps(ee1), a);
  b = _mm256_fmadd_ps(w.k[7], _mm256_loadu_ps(eo1), b);
  a = _mm256_fmadd_ps(w.k[8], _mm256_loadu_ps(ee1 + 1), a);
  return w.clamp(_mm256_add_ps(a, b));
}

}  // namespace

void f32_depthwise3x3_s1_rows__avx2(const float *in, int64_t l, const float *k, float bias,
                                    float lo, float hi, float *out, int64_t len) {
  const Weights3x3 w(k, bias, lo, hi);
  const float *r1 = in + l, *r2 = in + 2 * l;
  int64_t t = 0;
  for (; t + 16 <= len; t += 16) {
    const __m256 y0 = sum_s1(w, in + t, r1 + t, r2 + t);
    const __m256 y1 = sum_s1(w, in + t + 8, r1 + t + 8, r2 + t + 8);
    _mm256_storeu_ps(out + t, y0);
    _mm256_storeu_ps(out + t + 8, y1);
  }
  for (; t + 8 <= len; t += 8) _mm256_storeu_ps(out + t, sum_s1(w, in + t, r1 + t, r2 + t));
  for (; t < len; ++t) {
    float acc = bias;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) acc += k[a * 3 + b] * in[t + a * l + b];
    out[t] = clamp(acc, lo, hi);
  }
}

void f32_depthwise3x3_s2_rows__avx2(const float *ee, const float *eo, const float *oe,
                                    const float *oo, int64_t l, const float *k, float bias,
                                    float lo, float hi, float *out, int64_t len) {
  const Weights3x3 w(k, bias, lo, hi);
  const float *ee1 = ee + l, *eo1 = eo + l;
  int64_t t = 0;
  for (; t + 16 <= len; t += 16) {
    const __m256 y0 = sum_s2(w, ee + t, eo + t, oe + t, oo + t, ee1 + t, eo1 + t);
    const __m256 y1 =
        sum_s2(w, ee + t + 8, eo + t + 8, oe + t + 8, oo + t + 8, ee1 + t + 8, eo1 + t + 8);
    _mm256_storeu_ps(out + t, y0);
    _mm256_storeu_ps(out + t + 8, y1);
  }
  for (; t + 8 <= len; t += 8)
    _mm256_storeu_ps(out + t, sum_s2(w, ee + t, eo + t, oe + t, oo + t, ee1 + t, eo1 + t));
  for (; t < len; ++t) {
    const float acc = bias + k[0] * ee[t] + k[1] * eo[t] + k[2] * ee[t + 1] + k[3] * oe[t] +
                      k[4] * oo[t] + k[5] * oe[t + 1] + k[6] * ee1[t] + k[7] * eo1[t] +
                      k[8] * ee1[t + 1];
    out[t] = clamp(acc, lo, hi);
  }
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
