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

// Pooling along one dim: the window taps [lo, hi) of output `o` that read inside an input of
// `size` (padded by pad_begin and pad_end), and the count ONNX average pooling divides by: those
// taps, or with count_include_pad the taps inside the padded input.
struct PoolTaps {
  int64_t lo, hi, count;
};
inline PoolTaps pool_taps(int64_t o, int64_t size, int64_t kernel, int64_t stride,
                          int64_t pad_begin, int64_t pad_end, int64_t dilation, bool include_pad) {
  const int64_t offset = o * stride - pad_begin;
  PoolTaps t{};
  valid_range(offset, dilation, size, kernel, t.lo, t.hi);
  t.count = include_pad ? std::clamp<int64_t>(size + pad_end - offset, 0, kernel) : t.hi - t.lo;
  return t;
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
