// Depthwise convolution. With AVX2, float convs with one output per input channel run 8 channels
// at a time (16 for 3x3 with AVX-512), one per vector lane, where that beats the plane-wise loops
// (narrow planes, large kernels: see channels_in_lanes below). Otherwise one input plane at a time:
// the plane is first copied into a zero-padded buffer, so the inner loops have no bounds checks.
// 3x3 kernels with stride 1 or 2 then run as one flat loop over the padded width (a few thrown-away
// columns per row keep the vectors full even on 7x7 planes) with the nine taps summed in registers;
// for stride 2 the input is copied split by row and column parity instead, so every tap reads
// contiguous memory. Any other kernel size, stride or dilation (one stride for rows and columns)
// runs the same way: the plane split into stride x stride phase planes, each tap one contiguous
// read, four taps per pass over a block of outputs (flat_taps). Different row and column strides
// run row by row, tap by tap. The zero borders are written once per thread and call, only the
// inside per plane. The epilogue runs on each finished row (or block of narrow rows) while it is in
// L1. 1x1 kernels are a per-channel affine map. Parallel over input planes (n, c), each producing
// its p.mg output planes.
#include "backends/cpu/kernels/depthwise_conv.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/ukernels/f32_depthwise.h"
#include "core/cpu_isa.h"

namespace lumen {
namespace {

// The rectangle of the padded input the output reads: rows x cols, starting at (-pt, -pl).
struct Padded {
  int64_t rows, cols;
};

// Copies input plane xc into the inside of buf (rows x cols, row stride cols), the padded
// rectangle; its zero border is written once per buffer (zero_border) and never touched here.
template <class T>
LUMEN_VEC_INLINE inline void pad_plane(const ConvParams &p, const Padded &pd, const T *xc, T *buf) {
  const int64_t r0 = std::clamp<int64_t>(p.pt, 0, pd.rows);
  const int64_t r1 = std::clamp<int64_t>(p.pt + p.h, r0, pd.rows);
  const int64_t c0 = std::clamp<int64_t>(p.pl, 0, pd.cols);
  const int64_t c1 = std::clamp<int64_t>(p.pl + p.w, c0, pd.cols);
  // Padded (r, c) reads input (r - pt, c - pl). Plain loops: rows are short (7x7 planes), and a
  // library call per row cost more than the copy.
  for (int64_t r = r0; r < r1; ++r) {
    T *dst = buf + r * pd.cols;
    const T *src = xc + (r - p.pt) * p.w - p.pl;
    for (int64_t c = c0; c < c1; ++c) dst[c] = src[c];
  }
}

// Stride-2 layout: the padded plane (2 oh + 1 rows, 2 ow + 1 cols) split by row and column
// parity into four planes of (oh + 1) x L, L = ow + 1, so that every tap of a 3x3 stride-2 window
// is a contiguous read: quad[2 * (r % 2) + (c % 2)][r / 2][c / 2] = padded[r][c].
template <class T>
LUMEN_VEC_INLINE inline void split_quads(const ConvParams &p, const Padded &pd, const T *xc,
                                         T *quad, bool avx2) {
  // Straight from the input: only the inside is written, the same places every plane (the rest
  // was zeroed once, see depthwise_conv2d).
  const int64_t l = p.ow + 1, plane = (p.oh + 1) * l;
  const int64_t r0 = std::clamp<int64_t>(p.pt, 0, pd.rows);
  const int64_t r1 = std::clamp<int64_t>(p.pt + p.h, r0, pd.rows);
  const int64_t c0 = std::clamp<int64_t>(p.pl, 0, pd.cols);
  const int64_t c1 = std::clamp<int64_t>(p.pl + p.w, c0, pd.cols);
  for (int64_t r = r0; r < r1; ++r) {
    const T *src = xc + (r - p.pt) * p.w - p.pl;  // src[c]: padded column c
    T *even = quad + (2 * (r % 2)) * plane + (r / 2) * l, *odd = even + plane;
    // The input row's even and odd columns land in the parity planes that padded column c0 =
    // pl and c0 + 1 fall in (scalar, the strided copy was most of a 112x112 plane's time).
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (std::is_same_v<T, float>) {
      if (avx2) {
        T *at_c0 = (c0 % 2 ? odd : even) + c0 / 2, *at_c1 = (c0 % 2 ? even : odd) + (c0 + 1) / 2;
        ukernels::f32_deinterleave__avx2(src + c0, c1 - c0, at_c0, at_c1);
        continue;
      }
    }
#else
    (void)avx2;
#endif
    for (int64_t k = (c0 + 1) / 2; 2 * k < c1; ++k) even[k] = src[2 * k];
    for (int64_t k = c0 / 2; 2 * k + 1 < c1; ++k) odd[k] = src[2 * k + 1];
  }
}

// Stride-s layout for any kernel: the padded plane split into s x s phase planes of
// rows x l each (l = ceil(padded cols / s)), phase[(r % s) s + c % s][r / s][c / s] =
// padded[r][c], so that one tap of all outputs is one contiguous read (see flat_taps).
template <class T>
LUMEN_VEC_INLINE inline void split_phases(const ConvParams &p, const Padded &pd, int64_t s,
                                          int64_t rows, int64_t l, const T *xc, T *phases) {
  const int64_t r0 = std::clamp<int64_t>(p.pt, 0, pd.rows);
  const int64_t r1 = std::clamp<int64_t>(p.pt + p.h, r0, pd.rows);
  const int64_t c0 = std::clamp<int64_t>(p.pl, 0, pd.cols);
  const int64_t c1 = std::clamp<int64_t>(p.pl + p.w, c0, pd.cols);
  const int64_t plane = rows * l;
  for (int64_t r = r0; r < r1; ++r) {
    const T *src = xc + (r - p.pt) * p.w - p.pl;  // src[c]: padded column c
    T *row = phases + (r % s) * s * plane + (r / s) * l;
    // Column phase by column phase: consecutive writes, no division per element.
    for (int64_t first = c0; first < std::min(c0 + s, c1); ++first) {
      T *dst = row + (first % s) * plane + first / s;
      for (int64_t c = first, k = 0; c < c1; c += s, ++k) dst[k] = src[c];
    }
  }
}

// Any kernel size, stride and dilation (one stride for rows and columns): out[t] = bias + the
// sum over taps of k[tap] * src[tap][t], src[tap] pointing into the padded plane or its phase
// planes. Four taps per pass over the outputs (which stay in L1), so the sums need few stores.
template <class T>
LUMEN_VEC_INLINE inline void flat_taps(const T *const *src, const T *k, int64_t taps, T bias,
                                       T *out, int64_t len) {
  int64_t tap = 0;
  for (; tap + 4 <= taps; tap += 4) {
    const T k0 = k[tap], k1 = k[tap + 1], k2 = k[tap + 2], k3 = k[tap + 3];
    const T *s0 = src[tap], *s1 = src[tap + 1], *s2 = src[tap + 2], *s3 = src[tap + 3];
    if (tap == 0)
      for (int64_t t = 0; t < len; ++t)
        out[t] = bias + k0 * s0[t] + k1 * s1[t] + k2 * s2[t] + k3 * s3[t];
    else
      for (int64_t t = 0; t < len; ++t) out[t] += k0 * s0[t] + k1 * s1[t] + k2 * s2[t] + k3 * s3[t];
  }
  if (tap == 0) std::fill(out, out + len, bias);
  for (; tap < taps; ++tap) {
    const T kv = k[tap], *s0 = src[tap];
    for (int64_t t = 0; t < len; ++t) out[t] += kv * s0[t];
  }
}

// 3x3 stride 1 over the padded plane as one flat loop: out[t] for t = i * l + j reads
// padded[t + a * l + b]. Columns j >= ow of each row are computed and thrown away; a flat loop
// keeps vectors full even on 7x7 planes.
template <class T>
LUMEN_VEC_INLINE inline void flat_3x3_s1(const T *in, int64_t l, const T *k, T bias, T *out,
                                         int64_t len) {
  const T k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4], k5 = k[5], k6 = k[6], k7 = k[7],
          k8 = k[8];
  const T *r0 = in, *r1 = in + l, *r2 = in + 2 * l;
  for (int64_t t = 0; t < len; ++t) {
    T acc = bias + k0 * r0[t] + k1 * r0[t + 1] + k2 * r0[t + 2];
    acc += k3 * r1[t] + k4 * r1[t + 1] + k5 * r1[t + 2];
    acc += k6 * r2[t] + k7 * r2[t + 1] + k8 * r2[t + 2];
    out[t] = acc;
  }
}

// 3x3 stride 2 over the four parity planes (see split_quads), flat as above.
template <class T>
LUMEN_VEC_INLINE inline void flat_3x3_s2(const T *ee, const T *eo, const T *oe, const T *oo,
                                         int64_t l, const T *k, T bias, T *out, int64_t len) {
  const T k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4], k5 = k[5], k6 = k[6], k7 = k[7],
          k8 = k[8];
  const T *ee1 = ee + l, *eo1 = eo + l;
  for (int64_t t = 0; t < len; ++t) {
    T acc = bias + k0 * ee[t] + k1 * eo[t] + k2 * ee[t + 1];
    acc += k3 * oe[t] + k4 * oo[t] + k5 * oe[t + 1];
    acc += k6 * ee1[t] + k7 * eo1[t] + k8 * ee1[t + 1];
    out[t] = acc;
  }
}

// Any kernel size, stride and dilation, one output row: taps outer, the row accumulates in place.
template <class T>
LUMEN_VEC_INLINE inline void row_generic(const ConvParams &p, const Padded &pd, const T *buf,
                                         int64_t i, const T *k, T bias, T *out) {
  std::fill(out, out + p.ow, bias);
  for (int64_t a = 0; a < p.kh; ++a) {
    const T *row = buf + (i * p.sh + a * p.dh) * pd.cols;
    for (int64_t b = 0; b < p.kw; ++b) {
      const T kv = k[a * p.kw + b];
      const T *src = row + b * p.dw;
      if (p.sw == 1)
        for (int64_t j = 0; j < p.ow; ++j) out[j] += kv * src[j];
      else
        for (int64_t j = 0; j < p.ow; ++j) out[j] += kv * src[j * p.sw];
    }
  }
}

// S1, S2: 3x3 with unrolled taps; Flat: any other kernel with one stride for rows and columns;
// Generic: row by row (different row and column strides).
enum class Kind { Generic, S1, S2, Flat };

// The Flat layout: phase planes of `rows` x `l` (the padded plane itself for stride 1), and each
// tap's offset into them (phase plane index, then offset within).
struct FlatTaps {
  int64_t stride = 1, rows = 0, l = 0;
  std::vector<int64_t> phase, offset;
};

FlatTaps flat_taps_for(const ConvParams &p, const Padded &pd) {
  FlatTaps f;
  f.stride = p.sh;
  f.rows = ceil_div(pd.rows, f.stride);
  f.l = ceil_div(pd.cols, f.stride);
  for (int64_t a = 0; a < p.kh; ++a)
    for (int64_t b = 0; b < p.kw; ++b) {
      const int64_t r = a * p.dh, c = b * p.dw;
      f.phase.push_back((r % f.stride) * f.stride + c % f.stride);
      f.offset.push_back((r / f.stride) * f.l + c / f.stride);
    }
  return f;
}

// Per-thread buffers: the padded plane, its parity (or phase) planes, a block of flat outputs and
// the flat taps' source pointers.
template <class T>
struct Scratch {
  std::vector<T> padded, quads, flat;
  std::vector<const T *> taps;
};

constexpr int64_t kFlatBlock = 2048;  // flat outputs per block: 8 KiB of float, stays in L1
constexpr int64_t kDirectWidth = 64;  // output rows at least this wide are computed in place

template <class T>
LUMEN_VEC_INLINE inline void output_plane(const ConvParams &p, Kind kind, const Padded &pd,
                                          const FlatTaps &ft, Scratch<T> &s, const T *k, T bias,
                                          const T *residual, const Epilogue<T> &epilogue,
                                          bool has_epilogue, bool avx2, float lo, float hi, T *y) {
  auto finish_row = [&](int64_t i) {
    if (has_epilogue)
      epilogue.apply(y + i * p.ow, p.ow, nullptr, residual ? residual + i * p.ow : nullptr);
  };
  if (kind == Kind::Generic) {
    for (int64_t i = 0; i < p.oh; ++i) {
      vec::run_best([&]() LUMEN_VEC_INLINE {
        row_generic(p, pd, s.padded.data(), i, k, bias, y + i * p.ow);
      });
      finish_row(i);
    }
    return;
  }
  // Flat rows have stride l (padded width for stride 1, parity-plane width for stride 2, phase
  // width for Flat).
  const int64_t l = kind == Kind::S1 ? pd.cols : kind == Kind::Flat ? ft.l : p.ow + 1;
  const T *q = s.quads.data();
  const int64_t qplane = (p.oh + 1) * l;
  const T *phases = ft.stride == 1 ? s.padded.data() : s.quads.data();
  auto run = [&](int64_t t0, T *out, int64_t len) LUMEN_VEC_INLINE {
    if (kind == Kind::Flat) {
      const int64_t taps = static_cast<int64_t>(ft.offset.size());
      for (int64_t i = 0; i < taps; ++i)
        s.taps[size_t(i)] =
            phases + ft.phase[size_t(i)] * ft.rows * ft.l + ft.offset[size_t(i)] + t0;
      flat_taps(s.taps.data(), k, taps, bias, out, len);
      return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (std::is_same_v<T, float>) {
      if (avx2 && kind == Kind::S1)
        return ukernels::f32_depthwise3x3_s1_rows__avx2(s.padded.data() + t0, l, k, bias, lo, hi,
                                                        out, len);
      if (avx2)
        return ukernels::f32_depthwise3x3_s2_rows__avx2(q + t0, q + qplane + t0,
                                                        q + 2 * qplane + t0, q + 3 * qplane + t0, l,
                                                        k, bias, lo, hi, out, len);
    }
#endif
    if (kind == Kind::S1)
      flat_3x3_s1(s.padded.data() + t0, l, k, bias, out, len);
    else
      flat_3x3_s2(q + t0, q + qplane + t0, q + 2 * qplane + t0, q + 3 * qplane + t0, l, k, bias,
                  out, len);
  };
  if (p.ow >= kDirectWidth) {  // rows long enough to fill vectors: write them in place
    for (int64_t i = 0; i < p.oh; ++i) {
      run(i * l, y + i * p.ow, p.ow);
      finish_row(i);
    }
    return;
  }
  // Narrow planes: several rows per flat loop, then the ow useful columns of each are copied;
  // the epilogue runs once per block of rows (one call per row cost as much as the taps).
  const int64_t rows_per_block = std::max<int64_t>(1, kFlatBlock / l);
  T *flat = s.flat.data();
  for (int64_t i0 = 0; i0 < p.oh; i0 += rows_per_block) {
    const int64_t rows = std::min(rows_per_block, p.oh - i0);
    run(i0 * l, flat, (rows - 1) * l + p.ow);  // the last row needs only its first ow outputs
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < p.ow; ++j) y[(i0 + r) * p.ow + j] = flat[r * l + j];
    if (has_epilogue)
      epilogue.apply(y + i0 * p.ow, rows * p.ow, nullptr,
                     residual ? residual + i0 * p.ow : nullptr);
  }
}

// A 1x1 depthwise conv is a per-channel affine map (a batch norm rewritten as a conv, see
// fold_conv_batch_norm.cc): y = act(w[m] * x + b[m] + residual), straight over each plane.
template <class T>
void pointwise_planes(ThreadPool &pool, const ConvParams &p, const T *x, const T *w, const T *bias,
                      const T *residual, const Epilogue<T> &epilogue, T *y) {
  const int64_t plane = p.h * p.w;
  pool.parallel_for(p.n * p.m, std::max<int64_t>(1, (int64_t(1) << 15) / plane),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t out = begin; out < end; ++out) {
                        const int64_t m = out % p.m, in = (out / p.m) * p.c + m / p.mg;
                        const T scale = w[m];
                        const T *src = x + in * plane;
                        T *dst = y + out * plane;
                        vec::run_best([&]() LUMEN_VEC_INLINE {
                          for (int64_t i = 0; i < plane; ++i) dst[i] = scale * src[i];
                        });
                        epilogue.apply_scalar_bias(dst, plane, bias ? bias[m] : T(0),
                                                   residual ? residual + out * plane : nullptr);
                      }
                    });
}

// A 1x1 stride-1 unpadded conv: a per-channel affine map.
bool pointwise_plane(const ConvParams &p) {
  return p.kh * p.kw == 1 && p.sh == 1 && p.sw == 1 && p.pt == 0 && p.pl == 0 && p.oh == p.h &&
         p.ow == p.w;
}

// Convs with one output channel per input channel (any kernel, strides, dilations) run 8 (AVX2)
// channels at a time, one per vector lane, where depthwise_lanes_pay_off; 3x3 ones 16 at a time
// with AVX-512 (ukernels/f32_depthwise.h).

template <class T>
void channels_in_lanes(ThreadPool &, const ConvParams &, const T *, const T *, const T *, const T *,
                       const Epilogue<T> &, T *) {
  fail("depthwise channels in lanes: float32 only");  // depthwise_lanes_available said no
}

template <>
void channels_in_lanes(ThreadPool &pool, const ConvParams &p, const float *x, const float *w,
                       const float *bias, const float *residual, const Epilogue<float> &epilogue,
                       float *y) {
#if defined(__x86_64__) && defined(__GNUC__)
  const vec::Isa isa = vec::cpu_isa();
  // AVX-512 has a 3x3 kernel of its own; everything else takes the AVX2 one.
  const bool avx512_3x3 = isa == vec::Isa::Avx512 && p.kh == 3 && p.kw == 3 && p.dh == 1 &&
                          p.dw == 1 && p.sh == p.sw && (p.sh == 1 || p.sh == 2);
  const int lanes = avx512_3x3 ? 16 : 8;
  const int64_t blocks = ceil_div(p.c, lanes), in_plane = p.h * p.w, out_plane = p.oh * p.ow;
  // The AVX2 kernel clamps in registers (relu, relu6); anything else is one more pass.
  float lo = 0, hi = 0;
  const bool clamp_in_kernel = !avx512_3x3 && !residual && epilogue.as_clamp(lo, hi);
  const bool has_epilogue = !clamp_in_kernel && (residual || epilogue.has_activation());
  pool.parallel_for(p.n * blocks, 1, [&](int64_t begin, int64_t end) {
    thread_local cpu::AlignedFloats scratch;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / blocks, c0 = item % blocks * lanes;
      const int channels = static_cast<int>(std::min<int64_t>(lanes, p.c - c0));
      const int64_t out = (n * p.m + c0) * out_plane;
      const ukernels::DepthwiseChannels d{.x = x + (n * p.c + c0) * in_plane,
                                          .h = p.h,
                                          .w = p.w,
                                          .pt = p.pt,
                                          .pl = p.pl,
                                          .kh = p.kh,
                                          .kw = p.kw,
                                          .sh = p.sh,
                                          .sw = p.sw,
                                          .dh = p.dh,
                                          .dw = p.dw,
                                          .weights = w + c0 * p.kh * p.kw,
                                          .bias = bias ? bias + c0 : nullptr,
                                          .channels = channels,
                                          .y = y + out,
                                          .oh = p.oh,
                                          .ow = p.ow,
                                          .lo = clamp_in_kernel ? lo : -INFINITY,
                                          .hi = clamp_in_kernel ? hi : INFINITY};
      scratch.resize(ukernels::f32_depthwise_scratch(d, lanes));
      float *aligned = scratch.data();
      if (avx512_3x3)
        ukernels::f32_depthwise3x3_c16__avx512(d, aligned);
      else
        ukernels::f32_depthwise_c8__avx2(d, aligned);
      if (has_epilogue)
        epilogue.apply(y + out, channels * out_plane, nullptr, residual ? residual + out : nullptr);
    }
  });
#else
  (void)pool, (void)p, (void)x, (void)w, (void)bias, (void)residual, (void)epilogue, (void)y;
#endif
}

}  // namespace

bool depthwise_lanes_available(const ConvParams &p) {
#if defined(__x86_64__) && defined(__GNUC__)
  return vec::cpu_isa() >= vec::Isa::Avx2 && p.mg == 1 && p.pt >= 0 && p.pl >= 0 &&
         !pointwise_plane(p);
#else
  (void)p;
  return false;
#endif
}

// Whether channels in lanes beats plane by plane. Planes narrower than two vectors leave most of
// the plane-wise loops' lanes empty; wide planes fill them, and then the transposes in and out cost
// more than they save, except where the plane-wise path is its slowest: the flat taps (kernels
// other than 3x3), strided 5x5 and up, and 7x7 and up (ConvNeXt) at any width. In-process A/B at
// 2 threads (Zen 2), lanes/planes time: 3x3 s1 on 7x7 0.74, 14x14 0.99, 28x28 1.18, 56x56 1.16;
// 5x5 s1 7x7 0.72, 14x14 0.95, 28x28 1.11; 5x5 s2 to 28x28 0.79, to 56x56 0.88; 7x7 s1 on 14x14
// 0.77, 56x56 0.93; 3x3 dilation 2 on 28x28 1.31.
bool depthwise_lanes_pay_off(const ConvParams &p) {
  const int64_t taps = p.kh * p.kw;
  return p.ow < 16 || (taps >= 25 && (p.sw > 1 || taps >= 49));
}

template <class T>
void depthwise_conv2d(ThreadPool &pool, const ConvParams &p, const T *x, const T *w, const T *bias,
                      const T *residual, const Epilogue<T> &epilogue, T *y,
                      DepthwiseAlgorithm algorithm) {
  const int64_t in_plane = p.h * p.w, out_plane = p.oh * p.ow, kernel_area = p.kh * p.kw;
  if (p.n * p.m == 0 || out_plane == 0) return;
  if (pointwise_plane(p)) return pointwise_planes(pool, p, x, w, bias, residual, epilogue, y);
  const bool lanes = std::is_same_v<T, float> && depthwise_lanes_available(p) &&
                     (algorithm == DepthwiseAlgorithm::kLanes ||
                      (algorithm == DepthwiseAlgorithm::kRule && depthwise_lanes_pay_off(p)));
  if (lanes) return channels_in_lanes(pool, p, x, w, bias, residual, epilogue, y);
  const bool is3x3 = p.kh == 3 && p.kw == 3 && p.dh == 1 && p.dw == 1 && p.sh == p.sw;
  const Kind kind = p.sh != p.sw         ? Kind::Generic
                    : is3x3 && p.sw == 1 ? Kind::S1
                    : is3x3 && p.sw == 2 ? Kind::S2
                                         : Kind::Flat;
  const Padded pd{(p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1,
                  (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1};
  const FlatTaps ft = kind == Kind::Flat ? flat_taps_for(p, pd) : FlatTaps{};
  // Input planes, each feeding p.mg output planes; ~32K multiply-adds per parallel chunk (a
  // 576-channel 7x7 layer has only 254K in all, and must still use every thread).
  const int64_t planes = p.n * p.c;
#if defined(__x86_64__) && defined(__GNUC__)
  const bool avx2 = vec::cpu_isa() >= vec::Isa::Avx2;
#else
  const bool avx2 = false;
#endif
  // The AVX2 3x3 rows clamp as they store (relu, relu6), sparing an epilogue call per row.
  float lo = -INFINITY, hi = INFINITY;
  bool clamp_in_rows = false;
  if constexpr (std::is_same_v<T, float>)
    clamp_in_rows =
        avx2 && (kind == Kind::S1 || kind == Kind::S2) && !residual && epilogue.as_clamp(lo, hi);
  const bool has_epilogue = !clamp_in_rows && (residual || epilogue.has_activation());
  const int64_t work = std::max<int64_t>(1, out_plane * kernel_area * p.mg);
  pool.parallel_for(
      planes, std::max<int64_t>(1, (int64_t(1) << 15) / work), [&](int64_t begin, int64_t end) {
        thread_local Scratch<T> s;
        // Zero once: pad_plane and split_quads write the same places every plane.
        if (kind == Kind::S2)
          s.quads.assign(size_t(4 * (p.oh + 1) * (p.ow + 1)), T(0));
        else if (kind == Kind::Flat && ft.stride > 1)
          s.quads.assign(size_t(ft.stride * ft.stride * ft.rows * ft.l), T(0));
        else
          s.padded.assign(size_t(pd.rows * pd.cols), T(0));
        s.flat.resize(size_t(kFlatBlock + pd.cols + 1));
        s.taps.resize(ft.offset.size());
        for (int64_t q = begin; q < end; ++q) {
          // One ISA dispatch per plane: copies and taps all run vectorized.
          vec::run_best([&]() LUMEN_VEC_INLINE {
            if (kind == Kind::S2)
              split_quads(p, pd, x + q * in_plane, s.quads.data(), avx2);
            else if (kind == Kind::Flat && ft.stride > 1)
              split_phases(p, pd, ft.stride, ft.rows, ft.l, x + q * in_plane, s.quads.data());
            else
              pad_plane(p, pd, x + q * in_plane, s.padded.data());
            const int64_t n = q / p.c, c = q % p.c;
            for (int64_t g = 0; g < p.mg; ++g) {
              const int64_t m = c * p.mg + g, out = n * p.m + m;
              output_plane(p, kind, pd, ft, s, w + m * kernel_area, bias ? bias[m] : T(0),
                           residual ? residual + out * out_plane : nullptr, epilogue, has_epilogue,
                           avx2, lo, hi, y + out * out_plane);
            }
          });
        }
      });
}

template void depthwise_conv2d<float>(ThreadPool &, const ConvParams &, const float *,
                                      const float *, const float *, const float *,
                                      const Epilogue<float> &, float *, DepthwiseAlgorithm);
template void depthwise_conv2d<double>(ThreadPool &, const ConvParams &, const double *,
                                       const double *, const double *, const double *,
                                       const Epilogue<double> &, double *, DepthwiseAlgorithm);

}  // namespace lumen
