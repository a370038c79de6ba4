#include "backends/cpu/kernels/im2col_panels.h"

#include <algorithm>
#include <vector>

#include "backends/cpu/ukernels/f32_im2col.h"
#include "core/cpu_isa.h"
#include "lumen/error.h"

namespace lumen::cpu {
namespace {

// A run of a panel's columns that lie on one output row: columns [t, t + count) of the panel are
// output pixels (oy, ox .. ox + count).
struct Segment {
  int64_t oy, ox;
  int t, count;
};

// For one segment and kernel column b: the input column of the segment's first pixel and the
// pixels [lo, hi) of the segment whose input column lies inside the image.
struct ColumnRange {
  int64_t ix0, lo, hi;
};

}  // namespace

PanelBlock Im2colB::panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                           float *buffer) const {
  const ConvParams &p = p_;
  Segment segments[64];  // a panel spans at most nr segments
  if (nr > 64) fail("im2col panels: nr=", nr, " is wider than 64");
  // The column ranges depend on (segment, b) only, not on the channel or kernel row: computed
  // once per panel, they keep divisions out of the per-row loop.
  std::vector<ColumnRange> ranges(static_cast<size_t>(64 * p.kw));
#if defined(__x86_64__) && defined(__GNUC__)
  static const vec::Isa isa = vec::cpu_isa();
  const bool fast_segments = isa >= vec::Isa::Avx2 && (p.sw == 1 || p.sw == 2);
#else
  const bool fast_segments = false;
#endif
  for (int64_t j = 0; j * nr < nc; ++j) {
    const int64_t c0 = n0 + j * nr;
    const int cols = static_cast<int>(std::min<int64_t>(nr, n0 + nc - c0));
    int num_segments = 0;
    for (int t = 0; t < cols;) {
      const int64_t pixel = c0 + t;
      const int64_t oy = pixel / p.ow, ox = pixel % p.ow;
      const int count = static_cast<int>(std::min<int64_t>(cols - t, p.ow - ox));
      segments[num_segments] = {oy, ox, t, count};
      for (int64_t b = 0; b < p.kw; ++b) {
        ColumnRange &r = ranges[static_cast<size_t>(num_segments * p.kw + b)];
        r.ix0 = ox * p.sw - p.pl + b * p.dw;
        valid_range(r.ix0, p.sw, p.w, count, r.lo, r.hi);
      }
      ++num_segments;
      t += count;
    }
    float *dst = buffer + j * kc * nr;
    KernelTap tap(p, k0);
    for (int64_t q = 0; q < kc; ++q, dst += nr, tap.next(p)) {
      const int64_t ci = tap.c, a = tap.a, b = tap.b;
      const float *xc = x_ + ci * p.h * p.w;
      for (int s = 0; s < num_segments; ++s) {
        const Segment &seg = segments[s];
        float *out = dst + seg.t;
        const int64_t iy = seg.oy * p.sh - p.pt + a * p.dh;
        if (iy < 0 || iy >= p.h) {
          for (int i = 0; i < seg.count; ++i) out[i] = 0.0f;
          continue;
        }
        const ColumnRange &r = ranges[static_cast<size_t>(s * p.kw + b)];
#if defined(__x86_64__) && defined(__GNUC__)
        if (fast_segments && isa == vec::Isa::Avx512) {
          if (p.sw == 1)
            ukernels::f32_im2col_segment__avx512(xc + iy * p.w, r.ix0, r.lo, r.hi, seg.count, out);
          else
            ukernels::f32_im2col_segment_s2__avx512(xc + iy * p.w, r.ix0, r.lo, r.hi, seg.count,
                                                    out);
          continue;
        }
        if (fast_segments) {  // the rest of the panel row is written after this segment
          if (p.sw == 1)
            ukernels::f32_im2col_segment__avx2(xc + iy * p.w, r.ix0, r.lo, r.hi, seg.count,
                                               nr - seg.t, out);
          else
            ukernels::f32_im2col_segment_s2__avx2(xc + iy * p.w, r.ix0, r.lo, r.hi, seg.count,
                                                  nr - seg.t, out);
          continue;
        }
#endif
        // Plain loops rather than memcpy/fill: segments are short (at most nr), so a call costs
        // more than the copy; the compiler vectorizes these.
        const float *row = xc + iy * p.w;
        for (int64_t i = 0; i < r.lo; ++i) out[i] = 0.0f;
        if (p.sw == 1)
          for (int64_t i = r.lo; i < r.hi; ++i) out[i] = row[r.ix0 + i];
        else
          for (int64_t i = r.lo; i < r.hi; ++i) out[i] = row[r.ix0 + i * p.sw];
        for (int64_t i = r.hi; i < seg.count; ++i) out[i] = 0.0f;
      }
      for (int i = cols; i < nr; ++i) dst[i] = 0.0f;
    }
  }
  return {buffer, kc * nr};
}

}  // namespace lumen::cpu
