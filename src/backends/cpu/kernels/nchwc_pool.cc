// Max and average pooling in the channel-blocked layout NCHW8c (graph/ops/nchwc.cc), float32:
// a block's 8 channels are one vector, so every window tap is one vector max or add, and a chain
// of blocked convs does not change layout around its pools. Work items: bands of output rows of
// one (image, block). Each output combines its window's taps inside the image (no padded copy);
// an average divides by the count ONNX defines (taps inside the image, or with count_include_pad
// inside the padded image). Max keeps NaN, as the NCHW kernel does.
#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/ukernels/f32_nchwc.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kBlock = ukernels::kNchwcBlock;
constexpr int64_t kBandFloats = 4096;  // output floats per work item

using ukernels::nchwc_avx2;
using ukernels::nchwc_avx512;
#if defined(__x86_64__) && defined(__GNUC__)
using ukernels::f32_nchwc_pool_rows__avx2;
using ukernels::f32_nchwc_pool_rows__avx512;
#else
void f32_nchwc_pool_rows__avx2(const ukernels::NchwcPool &, int64_t, int64_t) {}
void f32_nchwc_pool_rows__avx512(const ukernels::NchwcPool &, int64_t, int64_t) {}
#endif

// The plain C++ version of f32_nchwc_pool_rows__avx2.
void pool_rows_portable(const ukernels::NchwcPool &p, int64_t row_begin, int64_t row_end) {
  for (int64_t i = row_begin; i < row_end; ++i)
    for (int64_t j = 0; j < p.ow; ++j) {
      float acc[kBlock];
      for (float &v : acc) v = p.max ? -std::numeric_limits<float>::infinity() : 0.0f;
      for (int64_t a = p.row_lo[i]; a < p.row_hi[i]; ++a)
        for (int64_t b = p.col_lo[j]; b < p.col_hi[j]; ++b) {
          const int64_t r = i * p.sh - p.pt + a * p.dh, c = j * p.sw - p.pl + b * p.dw;
          const float *v = p.x + (r * p.w + c) * kBlock;
          for (int64_t l = 0; l < kBlock; ++l)
            acc[l] = !p.max ? acc[l] + v[l] : v[l] != v[l] ? v[l] : (v[l] > acc[l] ? v[l] : acc[l]);
        }
      for (int64_t l = 0; l < kBlock; ++l)
        p.y[(i * p.ow + j) * kBlock + l] = p.max ? acc[l] : acc[l] / (p.row_div[i] * p.col_div[j]);
    }
}

template <bool kMax>
void nchwc_pool2d(KernelContext &ctx) {
  const Shape &xs = ctx.input(0).shape(), &ys = ctx.output(0).shape();
  if (xs.rank() != 5 || xs[4] != kBlock || ys.rank() != 5 || ys[4] != kBlock)
    ctx.fail("the CPU kernel takes block ", kBlock, " only; got input ", xs.to_string(),
             ", output ", ys.to_string());
  const auto kernel = ctx.attrs.get_ints("kernel_shape", {1, 1});
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  const bool include_pad = ctx.attrs.get_int("count_include_pad", 0) != 0;
  const int64_t h = xs[2], w = xs[3], oh = ys[2], ow = ys[3];
  const int64_t kh = kernel.at(0), kw = kernel.at(1);
  ukernels::NchwcPool p{.w = w,
                        .ow = ow,
                        .sh = strides.at(0),
                        .sw = strides.at(1),
                        .pt = pads.at(0),
                        .pl = pads.at(1),
                        .dh = dilations.at(0),
                        .dw = dilations.at(1),
                        .max = kMax};
  // Per output row and column: the kernel taps inside the image, and the divisor's factor.
  std::vector<int64_t> row_lo(oh), row_hi(oh), col_lo(ow), col_hi(ow);
  std::vector<float> row_div(oh), col_div(ow);
  for (int64_t i = 0; i < oh; ++i) {
    const PoolTaps t = pool_taps(i, h, kh, p.sh, p.pt, pads.at(2), p.dh, include_pad);
    row_lo[i] = t.lo, row_hi[i] = t.hi, row_div[i] = float(t.count);
  }
  for (int64_t j = 0; j < ow; ++j) {
    const PoolTaps t = pool_taps(j, w, kw, p.sw, p.pl, pads.at(3), p.dw, include_pad);
    col_lo[j] = t.lo, col_hi[j] = t.hi, col_div[j] = float(t.count);
  }
  p.row_lo = row_lo.data(), p.row_hi = row_hi.data(), p.row_div = row_div.data();
  p.col_lo = col_lo.data(), p.col_hi = col_hi.data(), p.col_div = col_div.data();
  const float *x = ctx.input(0).data<float>();
  float *y = ctx.output(0).data<float>();
  const int64_t in_plane = h * w * kBlock, out_plane = oh * ow * kBlock;
  const int64_t band = std::max<int64_t>(1, kBandFloats / std::max<int64_t>(1, ow * kBlock));
  const int64_t bands = ceil_div(oh, band);
  const auto rows = nchwc_avx512() ? f32_nchwc_pool_rows__avx512
                    : nchwc_avx2() ? f32_nchwc_pool_rows__avx2
                                   : pool_rows_portable;
  ctx.pool.parallel_for(xs[0] * xs[1] * bands, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t plane = item / bands, i0 = item % bands * band;
      ukernels::NchwcPool q = p;
      q.x = x + plane * in_plane, q.y = y + plane * out_plane;
      rows(q, i0, std::min(oh, i0 + band));
    }
  });
}

LUMEN_REGISTER_KERNEL("cpu", "nchwc_max_pool2d", nchwc_pool2d<true>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "nchwc_avg_pool2d", nchwc_pool2d<false>, DType::Float32);

}  // namespace
}  // namespace lumen
