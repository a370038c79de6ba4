#include "backends/cpu/kernels/grouped_conv.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/ukernels/f32_group_conv.h"
#include "core/cpu_isa.h"

namespace lumen::cpu {
namespace {

constexpr int64_t kLanes = 8;
// Past 16 output channels per group the GEMM's tiles fill up. In-process A/B at 2 threads (Zen 2),
// lanes/GEMM time (minimum of 30-300 runs): 8 per group (RegNet-Y-400MF's 3x3 convs, 7x7 to
// 112x112 inputs) 0.60-0.81, 16 per group 0.70-1.03, 24 per group 1.0-1.19.
constexpr int64_t kMaxChannelsPerGroup = 16;
// Ungrouped convs as shallow as first layers (3 channels, 3x3: 27 products per output) too: the
// GEMM's tiles are mostly loop overhead there. A/B at 2 threads on 224x224 RGB: 3->16, 3->24 and
// 3->32 3x3 s2 0.76-0.83x the time; a 7x7 3->64 (147 deep) 1.13x, left to the GEMM.
constexpr int64_t kMaxShallowDepth = 32;
// Padded input per strip: ~128 KiB, so a strip stays in L2 while its output blocks read it.
constexpr int64_t kStripFloats = 32 * 1024;

}  // namespace

bool grouped_conv_in_lanes_applies(int64_t group, int64_t cg, int64_t mg, int64_t taps) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (vec::cpu_isa() < vec::Isa::Avx2 || cg < 2 || mg % kLanes != 0) return false;
  return group > 1 ? mg <= kMaxChannelsPerGroup : taps > 1 && cg * taps <= kMaxShallowDepth;
#else
  (void)group, (void)cg, (void)mg, (void)taps;
  return false;
#endif
}

std::vector<float> grouped_conv_lane_weights(const float *w, int64_t m, int64_t cg, int64_t taps) {
  std::vector<float> out(static_cast<size_t>(m * cg * taps));
  float *dst = out.data();
  for (int64_t block = 0; block < m / kLanes; ++block)
    for (int64_t k = 0; k < cg * taps; ++k)
      for (int64_t l = 0; l < kLanes; ++l) *dst++ = w[(block * kLanes + l) * cg * taps + k];
  return out;
}

void grouped_conv_in_lanes(ThreadPool &pool, const ConvParams &p, const float *x,
                           const float *lane_weights, const float *bias, const float *residual,
                           const Epilogue<float> &epilogue, float *y) {
#if defined(__x86_64__) && defined(__GNUC__)
  const int64_t wp = (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1;
  const int64_t reach = (p.kh - 1) * p.dh + 1;  // input rows one output row reads
  // Output rows per strip: the strip's padded input fits kStripFloats, and there are at least
  // four strips per thread over all images and groups.
  int64_t strip = std::max<int64_t>(1, (kStripFloats / (p.cg * wp) - reach) / p.sh + 1);
  const int64_t images_groups = p.n * p.group;
  const int64_t wanted = 4 * pool.size();
  if (images_groups * ceil_div(p.oh, strip) < wanted)
    strip = std::max<int64_t>(1, p.oh / ceil_div(wanted, images_groups));
  strip = std::min(strip, p.oh);
  const int64_t strips = ceil_div(p.oh, strip), blocks = p.mg / kLanes, taps = p.kh * p.kw;
  // Too few strips (one image, one group, a small map): the output channels' blocks are split too.
  const int64_t per_chunk =
      ceil_div(blocks, std::clamp<int64_t>(ceil_div(wanted, images_groups * strips), 1, blocks));
  const int64_t chunks = ceil_div(blocks, per_chunk);
  const int64_t in_plane = p.h * p.w, out_plane = p.oh * p.ow;
  // The kernel clamps as it stores (relu, relu6); anything else is one more pass.
  float lo = 0, hi = 0;
  const bool clamp_in_kernel = !residual && epilogue.as_clamp(lo, hi);
  const bool has_epilogue = !clamp_in_kernel && (residual || epilogue.has_activation());
  pool.parallel_for(images_groups * strips * chunks, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> padded, scratch;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t chunk = item % chunks, ns = item / chunks;
      const int64_t ng = ns / strips, s = ns % strips, n = ng / p.group, g = ng % p.group;
      const int64_t i0 = s * strip, i1 = std::min(p.oh, i0 + strip);
      const int64_t rows = (i1 - 1 - i0) * p.sh + reach, r0 = i0 * p.sh - p.pt;
      // The strip's input rows, zero-padded: [cg][rows][wp].
      padded.resize(static_cast<size_t>(p.cg * rows * wp));
      const float *xg = x + (n * p.c + g * p.cg) * in_plane;
      // Padded column c reads input column c - pl.
      const int64_t c0 = std::clamp<int64_t>(p.pl, 0, wp), c1 = std::clamp(p.pl + p.w, c0, wp);
      for (int64_t c = 0; c < p.cg; ++c)
        for (int64_t r = 0; r < rows; ++r) {
          float *dst = padded.data() + (c * rows + r) * wp;
          const int64_t ir = r0 + r;
          if (ir < 0 || ir >= p.h) {
            std::fill(dst, dst + wp, 0.0f);
            continue;
          }
          const float *src = xg + c * in_plane + ir * p.w + (c0 - p.pl);
          std::fill(dst, dst + c0, 0.0f);
          std::copy(src, src + (c1 - c0), dst + c0);
          std::fill(dst + c1, dst + wp, 0.0f);
        }
      scratch.resize(static_cast<size_t>((p.ow + kLanes) * kLanes + kLanes));
      const auto address = reinterpret_cast<uintptr_t>(scratch.data());
      float *aligned = scratch.data() + ((32 - address % 32) % 32) / sizeof(float);
      for (int64_t b = chunk * per_chunk; b < std::min(blocks, (chunk + 1) * per_chunk); ++b) {
        const int64_t m0 = g * p.mg + b * kLanes;  // the block's first output channel
        float *yb = y + (n * p.m + m0) * out_plane;
        const ukernels::GroupConvRows d{.x = padded.data(),
                                        .cg = p.cg,
                                        .channel_stride = rows * wp,
                                        .wp = wp,
                                        .kh = p.kh,
                                        .kw = p.kw,
                                        .sh = p.sh,
                                        .sw = p.sw,
                                        .dh = p.dh,
                                        .dw = p.dw,
                                        .weights = lane_weights + m0 * p.cg * taps,
                                        .bias = bias ? bias + m0 : nullptr,
                                        .oh = i1 - i0,
                                        .ow = p.ow,
                                        .y = yb + i0 * p.ow,
                                        .out_plane = out_plane,
                                        .scratch = aligned,
                                        .lo = clamp_in_kernel ? lo : -INFINITY,
                                        .hi = clamp_in_kernel ? hi : INFINITY};
        ukernels::f32_group_conv_c8__avx2(d);
        if (!has_epilogue) continue;
        for (int64_t l = 0; l < kLanes; ++l) {
          const int64_t offset = l * out_plane + i0 * p.ow;
          epilogue.apply(yb + offset, (i1 - i0) * p.ow, nullptr,
                         residual ? residual + (n * p.m + m0) * out_plane + offset : nullptr);
        }
      }
    }
  });
#else
  (void)pool, (void)p, (void)x, (void)lane_weights, (void)bias, (void)residual, (void)epilogue,
      (void)y;
#endif
}

}  // namespace lumen::cpu
