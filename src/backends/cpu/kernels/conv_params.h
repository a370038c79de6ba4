// The geometry of one 2-D convolution (NCHW input, [M, C/group, KH, KW] weight), shared by the
// CPU conv kernels.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lumen {

struct ConvParams {
  int64_t n, c, h, w;     // input
  int64_t m, cg, kh, kw;  // weight
  int64_t oh, ow;         // output
  int64_t group, mg;
  int64_t sh, sw, pt, pl, dh, dw;
};

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Output columns o in [lo, hi) whose input column o * stride + offset lies in [0, size); also
// window taps t in [lo, hi) whose input index offset + t * step lies in [0, size) (pooling).
inline void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t out, int64_t &lo,
                        int64_t &hi) {
  lo = offset >= 0 ? 0 : ceil_div(-offset, stride);
  hi = size - offset <= 0 ? 0 : ceil_div(size - offset, stride);
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
}

// Row k of a conv's im2col matrix is (input channel c, kernel row a, kernel column b); walks k
// upward from any start without a division per row.
struct KernelTap {
  int64_t c, a, b;
  KernelTap(const ConvParams &p, int64_t k)
      : c(k / (p.kh * p.kw)), a((k / p.kw) % p.kh), b(k % p.kw) {}
  void next(const ConvParams &p) {
    if (++b < p.kw) return;
    b = 0;
    if (++a < p.kh) return;
    a = 0;
    ++c;
  }
};

}  // namespace lumen
