// CPU kernels of the channel-blocked layout NCHW8c (graph/ops/nchwc.cc), float32, block 8.
//
// nchwc_conv, three kinds and Winograd, one conv-tile micro-kernel (f32_nchwc.h; AVX2: a block
// per vector, AVX-512: two) for all but depthwise:
// - pointwise: weights packed once into filter groups of a few output blocks (tile_kernel()),
//   [C][F][8] per group; a work item is (image, run of output pixels, slice of the groups), walked
//   in tiles of pixels, 16 input blocks per pass, reading the blocked input where it lies;
// - grouped (groups of whole blocks, dense convs as one group, any kernel): the input copied
//   zero-padded (by each thread, band by band, where the weights fit in L2), then per (image,
//   group, filter group, band of rows) the tile sums every tap, its tiles spanning the band's
//   rows; a chain's entry conv reads a plain NCHW input this way (one channel plane per step of
//   the tile);
// - Winograd (dense 3x3 stride 1, nchwc_winograd.h) where it measures faster than grouped;
// - depthwise: per (image, channel block, band of rows), each output's taps one vector
//   multiply-add each (AVX-512: two outputs per vector); a 1x1 depthwise conv is one affine pass.
// Activations that are clamps (relu, clip) are applied in registers, the others over each work
// item's output right after it, while it is in cache. Without AVX2 the same loops run as plain
// C++.
//
// nchwc_pointwise_depthwise: a pointwise conv's output t made band by band of rows into a
// thread's scratch, where the depthwise conv reads it (run_pointwise_depthwise).
//
// to_nchwc / from_nchwc: 8x8 transposes, one work item per (image, channel block).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/kernels/conv_choice.h"
#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/kernels/nchwc_winograd.h"
#include "backends/cpu/ukernels/f32_nchwc.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"
#include "graph/ops/pointwise_depthwise.h"

namespace lumen {
namespace {

constexpr int64_t kBlock = ukernels::kNchwcBlock;
constexpr int64_t kInBlocksPerPass = 16;
// Output pixels per pointwise work item: enough to amortize the call, few enough that the item's
// input slice stays in L2. Items are split finer where they would not keep every thread busy: at
// least kItemsPerThread each where items of kMinPixelsPerItem allow (three items on two threads
// left one idle a third of the time: MobileNetV2's 576 -> 96 convs on 14x14 maps).
constexpr int64_t kPixelsPerItem = 252;  // 21 AVX2 tiles of 12 / F pixels
constexpr int64_t kMinPixelsPerItem = 24;
constexpr int64_t kItemsPerThread = 4;
constexpr int64_t kBlocksPerSlice = 16;  // see run_pointwise
// The most bytes of a conv group's weights for which the grouped loops copy the input band by
// band (run_grouped): half an L2, where they stay while every filter group runs on a band.
constexpr int64_t kBandCopyWeightBytes = 1 << 20;
// Depthwise output bytes per work item.
constexpr int64_t kBandBytes = 16 * 1024;
// The rows of t a pointwise -> depthwise item holds at once: a quarter of a 2 MiB L2, beside
// the input rows that make them and the depthwise conv's own scratch.
constexpr int64_t kExpandedRowsBytes = 512 * 1024;
// Output rows of a pointwise -> depthwise item that splits the map by rows: each chunk makes
// again the t rows its first band shares with the chunk above.
constexpr int64_t kMinChunkRows = 8;

using ukernels::nchwc_avx2;
using ukernels::nchwc_avx512;
// The AVX2 and AVX-512 micro-kernels exist on x86-64 only (ukernels/*__avx2.cc, *__avx512.cc);
// elsewhere these stand in.
#if defined(__x86_64__) && defined(__GNUC__)
using ukernels::f32_from_nchw8c__avx2;
using ukernels::f32_nchwc_conv_tile__avx2;
using ukernels::f32_nchwc_conv_tile__avx512;
using ukernels::f32_nchwc_depthwise__avx2;
using ukernels::f32_nchwc_depthwise_row__avx512;
using ukernels::f32_to_nchw8c__avx2;
#else
void f32_nchwc_conv_tile__avx2(const ukernels::NchwcConvTile &, int64_t) {}
void f32_nchwc_conv_tile__avx512(const ukernels::NchwcConvTile &, int64_t) {}
void f32_nchwc_depthwise__avx2(const ukernels::DepthwiseChannels &, const float *, const float *,
                               int64_t, int64_t, float *, ukernels::NchwcDepthwiseRow) {}
ukernels::NchwcDepthwiseRow f32_nchwc_depthwise_row__avx512(int64_t, int64_t) {
  return nullptr;
}
void f32_to_nchw8c__avx2(const float *, int64_t, int64_t, float *) {}
void f32_from_nchw8c__avx2(const float *, int64_t, float *, int64_t) {}
#endif

using cpu::AlignedFloats;

enum class ConvKind { kPointwise, kDepthwise, kGrouped };

struct Geometry {
  int64_t n, cb, h, w;  // input [n, cb, h, w, 8]
  int64_t plain_c;      // a plain input [n, plain_c, h, w] (cb blocks, the last partly filled); 0
  int64_t mb, oh, ow;   // output [n, mb, oh, ow, 8]
  int64_t kh, kw, sh, sw, pt, pl, dh, dw;
  int64_t group, cgb, mgb;  // groups, and input and output blocks per group
  ConvKind kind;
};

// The kind of a step with blocked input shape x and weight shape w. Pointwise: 1x1, one group,
// unpadded. Depthwise: one channel per group. Grouped: any other conv whose groups hold whole
// blocks (a dense conv is one group), any kernel.
ConvKind kind_of(const Attributes &attrs, const Shape &x, const Shape &w) {
  const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
  const bool unpadded = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  const int64_t group = attrs.get_int("group", 1);
  if (x.rank() == 4) return ConvKind::kGrouped;  // a plain input: only the grouped loops read one
  const int64_t c = x.rank() == 5 ? x[1] * x[4] : kUnknownDim;
  if (group > 1 && group == c && w[0] == c && w[1] == 1) return ConvKind::kDepthwise;
  if (group == 1 && w[2] == 1 && w[3] == 1 && unpadded) return ConvKind::kPointwise;
  return ConvKind::kGrouped;
}

// The geometry of input x (blocked, or plain for a dense conv), weights w, blocked output y
// (shapes already checked).
Geometry geometry(const Shape &x, const Shape &w, const Shape &y, const Attributes &attrs) {
  const auto strides = attrs.get_ints("strides", {1, 1});
  const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = attrs.get_ints("dilations", {1, 1});
  const int64_t group = attrs.get_int("group", 1);
  Geometry g{};
  g.n = x[0], g.cb = x[1], g.h = x[2], g.w = x[3];
  if (x.rank() == 4) g.plain_c = x[1], g.cb = ceil_div(x[1], kBlock);
  g.mb = y[1], g.oh = y[2], g.ow = y[3];
  g.kh = w[2], g.kw = w[3], g.sh = strides.at(0), g.sw = strides.at(1);
  g.pt = pads.at(0), g.pl = pads.at(1), g.dh = dilations.at(0), g.dw = dilations.at(1);
  g.group = group;
  g.kind = kind_of(attrs, x, w);
  const int64_t mg = group > 0 ? g.mb * kBlock / group : 0;
  g.cgb = g.plain_c ? g.cb : w[1] / kBlock, g.mgb = mg / kBlock;
  return g;
}

Geometry geometry_of(const KernelContext &ctx) {
  const Shape &x = ctx.input(0).shape(), &w = ctx.input(1).shape(), &y = ctx.output(0).shape();
  const bool plain = x.rank() == 4;
  if ((!plain && (x.rank() != 5 || x[4] != kBlock)) || y.rank() != 5 || y[4] != kBlock)
    ctx.fail("the CPU kernel takes block ", kBlock, " only; got input ", x.to_string(), ", output ",
             y.to_string());
  const Geometry g = geometry(x, w, y, ctx.attrs);
  if (plain) {
    if (g.group != 1 || w[1] != x[1] || w[0] != g.mb * kBlock)
      ctx.fail("a plain input needs a dense conv (one group) with whole output blocks; got input ",
               x.to_string(), ", weight ", w.to_string(), ", group ", g.group);
    return g;
  }
  const int64_t cg = w[1], mg = g.mgb * kBlock;
  if (g.kind != ConvKind::kDepthwise &&
      (g.group < 1 || cg % kBlock != 0 || mg % kBlock != 0 || cg * g.group != g.cb * kBlock ||
       mg * g.group != g.mb * kBlock))
    ctx.fail("the CPU kernel needs whole blocks of ", kBlock, " channels per group; got weight ",
             w.to_string(), ", group ", g.group);
  return g;
}

void conv_tile_portable(const ukernels::NchwcConvTile &p, int64_t pixels);

// The conv-tile micro-kernel of this CPU: the most output blocks one call takes for a pointwise
// conv and for one with several taps (a dense, grouped or first conv: there, with the weights of
// all taps streaming from L2, more blocks per broadcast of the input measured faster), the blocks
// one vector holds, and a pixel count that is whole tiles for every block count.
struct TileKernel {
  void (*run)(const ukernels::NchwcConvTile &, int64_t pixels);
  int64_t max_filters, spatial_max_filters;
  int64_t vector_blocks;
  int64_t whole_tiles;
};
const TileKernel &tile_kernel() {
  using namespace ukernels;
  static const TileKernel kernel =
      nchwc_avx512() ? TileKernel{f32_nchwc_conv_tile__avx512, kNchwcMaxFilters512,
                                  kNchwcMaxFilters512Spatial, 2, 24}
      : nchwc_avx2()
          ? TileKernel{f32_nchwc_conv_tile__avx2, kNchwcMaxFilters, kNchwcMaxFilters, 1, 12}
          : TileKernel{conv_tile_portable, kNchwcMaxFilters, kNchwcMaxFilters, 1, 12};
  return kernel;
}

// First output block of each filter group, then mb. Groups of up to `most` blocks, as even as
// their count allows (13 blocks at three: 3 + 3 + 3 + 2 + 2, not a lone block at the end, whose
// tile uses each input broadcast once), in whole vectors of the tile where the count allows (32
// blocks at six, two per vector: 4 + 6 + 6 + 4 + 6 + 6, not 5 + 5 + 5 + 5 + 6 + 6, whose odd
// blocks fill half a vector: 256 -> 128 on 56x56, 1 thread, 1.25 -> 0.98 ms).
std::vector<int64_t> filter_groups(int64_t mb, int64_t most = tile_kernel().max_filters) {
  const int64_t unit = tile_kernel().vector_blocks;
  const int64_t units = ceil_div(mb, unit), count = ceil_div(units, most / unit);
  std::vector<int64_t> first;
  for (int64_t g = 0; g <= count; ++g) first.push_back(std::min(mb, g * units / count * unit));
  return first;
}

struct PackedWeights {
  AlignedFloats data;
  std::vector<int64_t> groups;  // filter_groups(output blocks per conv group)
  // Set where a dense 3x3 stride-1 conv runs by Winograd (then `data` is empty).
  std::shared_ptr<const cpu::NchwcWinogradWeights> winograd;
};

// Depthwise w [C, 1, kh, kw] -> [C / 8][kh * kw][8]. Otherwise w [M, cg, kh, kw] -> per conv
// group gg and filter group (first, F), at (gg * mg + first * 8) * cg * taps, its input passes
// (pass_channels each, the last maybe fewer) one after another, each [kh * kw][channels][F][8]:
// the kernels read the weights in address order, one pass per call.
std::shared_ptr<PackedWeights> pack(const Tensor &w, int64_t group, ConvKind kind,
                                    int64_t pass_channels) {
  auto packed = std::make_shared<PackedWeights>();
  const float *src = w.data<float>();
  const int64_t m = w.shape()[0], cg = w.shape()[1], taps = w.shape()[2] * w.shape()[3];
  packed->data.resize(static_cast<size_t>(w.numel()));
  float *dst = packed->data.data();
  if (kind == ConvKind::kDepthwise) {
    for (int64_t c = 0; c < m; ++c)
      for (int64_t t = 0; t < taps; ++t)
        dst[((c / kBlock) * taps + t) * kBlock + c % kBlock] = src[c * taps + t];
    return packed;
  }
  const int64_t mg = m / group;
  packed->groups =
      filter_groups(mg / kBlock, kind == ConvKind::kPointwise ? tile_kernel().max_filters
                                                              : tile_kernel().spatial_max_filters);
  for (int64_t gg = 0; gg < group; ++gg)
    for (size_t fg = 0; fg + 1 < packed->groups.size(); ++fg) {
      const int64_t first = packed->groups[fg], filters = packed->groups[fg + 1] - first;
      for (int64_t k0 = 0; k0 < cg; k0 += pass_channels) {
        const int64_t channels = std::min(pass_channels, cg - k0);
        float *out = dst + (gg * mg + first * kBlock) * cg * taps + k0 * taps * filters * kBlock;
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t k = 0; k < channels; ++k)
            for (int64_t f = 0; f < filters; ++f)
              for (int64_t l = 0; l < kBlock; ++l)
                out[((t * channels + k) * filters + f) * kBlock + l] =
                    src[((gg * mg + (first + f) * kBlock + l) * cg + k0 + k) * taps + t];
      }
    }
  return packed;
}

// Filter group gi's weights for the input pass from block k0 of a pointwise conv on c input
// channels (pack(): each group's passes one after another, [channels][F][8] each).
const float *pointwise_weights(const PackedWeights &packed, int64_t c, int64_t k0, int64_t gi) {
  const int64_t first = packed.groups[size_t(gi)];
  const int64_t filters = packed.groups[size_t(gi + 1)] - first;
  return packed.data.data() + first * kBlock * c + k0 * kBlock * filters * kBlock;
}

// The channels of one input pass of the grouped and pointwise loops: kInBlocksPerPass blocks; all
// of a plain input's (one pass).
int64_t pass_channels(bool plain_input, int64_t cg) {
  return plain_input ? std::max<int64_t>(cg, 1) : kInBlocksPerPass * kBlock;
}

// A step's tensors, and how its outputs are finished.
struct ConvRun {
  const float *x, *bias, *residual;  // bias and residual: nullptr when absent
  float *y;
  const Epilogue<float> &epilogue;
  float lo = 0, hi = 0;     // the clamp applied in registers: +-inf unless clamp_only
  bool clamp_only = false;  // the activation is that clamp; otherwise epilogue finishes each item
};

// Plain C++ versions of the micro-kernels (f32_nchwc.h), for CPUs without AVX2.
void conv_tile_portable(const ukernels::NchwcConvTile &p, int64_t pixels) {
  for (int64_t q = 0; q < pixels; ++q)
    for (int f = 0; f < p.filters; ++f) {
      float acc[kBlock];
      float *y = p.y + f * p.y_block_stride + q * kBlock;
      for (int l = 0; l < kBlock; ++l)
        acc[l] = p.accumulate ? y[l] : p.bias ? p.bias[f * kBlock + l] : 0.0f;
      for (int64_t t = 0; t < p.taps; ++t) {
        const float *x = p.x + (p.tap_offsets ? p.tap_offsets[t] : 0) +
                         (p.pixel_offsets ? p.pixel_offsets[q] : q * p.x_pixel_stride);
        const int64_t channels = p.in_blocks ? p.in_blocks * kBlock : 1;
        for (int64_t k = 0; k < channels; ++k) {
          const float xv = x[(k / kBlock) * p.x_block_stride + k % kBlock];
          const float *wk = p.w + t * p.w_tap_stride + (k * p.filters + f) * kBlock;
          for (int l = 0; l < kBlock; ++l) acc[l] += xv * wk[l];
        }
      }
      for (int l = 0; l < kBlock; ++l) {
        float v = acc[l];
        if (p.last) {
          if (p.residual) v += p.residual[f * p.y_block_stride + q * kBlock + l];
          v = v < p.lo ? p.lo : v;
          v = v > p.hi ? p.hi : v;
        }
        y[l] = v;
      }
    }
}

void depthwise_portable(const ukernels::DepthwiseChannels &d, const float *wv,
                        const float *residual, int64_t row_begin, int64_t row_end) {
  for (int64_t i = row_begin; i < row_end; ++i)
    for (int64_t j = 0; j < d.ow; ++j) {
      float acc[kBlock];
      for (int l = 0; l < kBlock; ++l) acc[l] = d.bias ? d.bias[l] : 0.0f;
      for (int64_t a = 0; a < d.kh; ++a) {
        const int64_t r = i * d.sh - d.pt + a * d.dh;
        if (r < 0 || r >= d.h) continue;
        for (int64_t b = 0; b < d.kw; ++b) {
          const int64_t c = j * d.sw - d.pl + b * d.dw;
          if (c < 0 || c >= d.w) continue;
          const float *x = d.x + (r * d.w + c) * kBlock, *k = wv + (a * d.kw + b) * kBlock;
          for (int l = 0; l < kBlock; ++l) acc[l] += x[l] * k[l];
        }
      }
      float *y = d.y + (i * d.ow + j) * kBlock;
      for (int l = 0; l < kBlock; ++l) {
        float v = acc[l] + (residual ? residual[(i * d.ow + j) * kBlock + l] : 0.0f);
        v = v < d.lo ? d.lo : v;
        y[l] = v > d.hi ? d.hi : v;
      }
    }
}

// Where the output pixels of `rows` rows of `cols` read their input, from the first's: rows
// `row_stride` pixels apart, columns `col_stride` apart, pixels of `lanes` floats.
std::vector<int64_t> pixel_offsets(int64_t rows, int64_t cols, int64_t row_stride,
                                   int64_t col_stride, int64_t lanes) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) offsets.push_back((i * row_stride + j * col_stride) * lanes);
  return offsets;
}

// `slices` ranges of the filter groups (first output block of each, then the count: `firsts`) as
// even in output blocks as whole groups allow: the first group of each slice, then the count.
std::vector<int64_t> even_slices(const std::vector<int64_t> &firsts, int64_t slices) {
  const auto groups = static_cast<int64_t>(firsts.size()) - 1;
  const int64_t blocks = firsts.back();
  std::vector<int64_t> bounds{0};
  for (int64_t s = 1; s < slices; ++s) {
    // The group boundary nearest to an even share, leaving at least one group per slice.
    const int64_t target = blocks * s / slices;
    int64_t gi = bounds.back() + 1;
    while (gi < groups - (slices - s) &&
           std::abs(firsts[size_t(gi + 1)] - target) <= std::abs(firsts[size_t(gi)] - target))
      ++gi;
    bounds.push_back(gi);
  }
  bounds.push_back(groups);
  return bounds;
}

// Work items: (image, run of output pixels, slice of the filter groups). A run's input is read
// once per pass for all the filter groups of its slice, while it is in L2, and a slice's weights
// for one pass stay within ~64 KiB (kBlocksPerSlice output blocks). Where that gives too few
// items, runs or slices get finer, whichever re-reads less (in-process A/B at 2 threads, against
// splitting pixels first: ResNet-50 0.97x, SqueezeNet 0.96x, MobileNetV2 0.975x, EfficientNet-B0
// 0.97x the time), and the items come in whole rounds over the threads. One group per item,
// re-reading the input per group, measured the same on MobileNetV2, MNASNet, DenseNet-121 and
// EfficientNet-B0 (within 1.5%, 2 threads); this order bounds what stays in cache for deep inputs
// as well.
void run_pointwise(ThreadPool &pool, const Geometry &g, const PackedWeights &packed,
                   const ConvRun &r) {
  const float *x = r.x, *bias = r.bias, *residual = r.residual;
  float *y = r.y;
  const int64_t in_plane = g.h * g.w * kBlock, out_pixels = g.oh * g.ow;
  const int64_t out_plane = out_pixels * kBlock, c = g.cb * kBlock;
  const bool flat = g.sh == 1 && g.sw == 1;  // output pixel q reads input pixel q
  const int64_t threads = pool.size(), wanted = kItemsPerThread * threads;
  const int64_t groups = static_cast<int64_t>(packed.groups.size()) - 1;
  int64_t runs = ceil_div(out_pixels, kPixelsPerItem);
  int64_t slices = std::min(groups, ceil_div(g.mb, kBlocksPerSlice));
  const int64_t max_runs = std::max<int64_t>(1, out_pixels / kMinPixelsPerItem);
  if (g.n * runs * slices < wanted) {
    // Too few items for the threads: split further where that re-reads less. Another run of
    // pixels re-reads the weights (C x M floats), another slice the run's input (C x pixels):
    // small maps with many output channels (ResNet-50's 2048 -> 512 on 7x7) split the channels.
    if (g.mb * kBlock >= out_pixels / runs)
      slices = std::clamp<int64_t>(ceil_div(wanted, g.n * runs), slices, groups);
    runs = std::clamp<int64_t>(ceil_div(wanted, g.n * slices), runs, std::max(runs, max_runs));
  }
  while ((g.n * runs * slices) % threads != 0 && runs < max_runs) ++runs;  // whole rounds
  // Runs of output pixels (flat: in whole tiles of every filter count) or of whole output rows,
  // as even as that allows, and slices of the filter groups as even in output blocks as the
  // groups allow: a thread's items take as long as another's (runs of 120 and 76 pixels, or
  // slices of 28 and 36 blocks, left one core waiting ~15% of the conv: 2 threads, ResNet-50).
  const int64_t whole = tile_kernel().whole_tiles, units = ceil_div(out_pixels, whole);
  runs = std::min(runs, flat ? units : g.oh);
  const auto run_begin = [&](int64_t run) {  // its first output pixel
    return flat ? std::min(out_pixels, units * run / runs * whole) : g.oh * run / runs * g.ow;
  };
  const std::vector<int64_t> slice_groups = even_slices(packed.groups, slices);
  // A strided conv's run of whole rows is one call, its tiles spanning rows (a 7x7 output in
  // tiles of 8 pixels, not rows of 7): each pixel's input, from the run's first.
  const std::vector<int64_t> offsets =
      flat ? std::vector<int64_t>{}
           : pixel_offsets(ceil_div(g.oh, runs), g.ow, g.sh * g.w, g.sw, kBlock);
  // Items come run by run, a thread's consecutive items sharing their input; slice by slice where
  // the weights outweigh the input (more output channels than output pixels), so that each thread
  // reads a share of the weights, which come from memory once per run, rather than all of them
  // (in-process A/B, 2 threads: ResNet-50 0.992x the time, MobileNetV2 0.989, Inception-v2 0.994,
  // SqueezeNet 0.991, DenseNet-121 0.999; 1x1 1024 <-> 256 convs on 14x14 0.946).
  const bool slice_major = g.mb * kBlock > out_pixels;
  const auto kernel = tile_kernel().run;
  pool.parallel_for(g.n * runs * slices, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (runs * slices);
      const int64_t run = slice_major ? item % runs : item / slices % runs;
      const int64_t slice = slice_major ? item / runs % slices : item % slices;
      const int64_t g0 = slice_groups[slice], g1 = slice_groups[slice + 1];
      const int64_t q0 = run_begin(run), q1 = run_begin(run + 1);
      ukernels::NchwcConvTile p{};
      p.x_block_stride = in_plane;
      p.x_pixel_stride = kBlock;
      p.pixel_offsets = flat ? nullptr : offsets.data();
      p.y_block_stride = out_plane;
      p.lo = r.lo, p.hi = r.hi;
      const int64_t in_pixel = flat ? q0 : q0 / g.ow * g.sh * g.w;
      // The calls run (pass, filter group) in order; the weights of each: [channels][F][8].
      const auto weight_floats = [&](int64_t k0, int64_t gi) {
        return std::min(kInBlocksPerPass, g.cb - k0) * kBlock *
               (packed.groups[gi + 1] - packed.groups[gi]) * kBlock;
      };
      for (int64_t k0 = 0; k0 < g.cb; k0 += kInBlocksPerPass) {
        p.in_blocks = std::min(kInBlocksPerPass, g.cb - k0);
        p.accumulate = k0 > 0;
        p.last = k0 + kInBlocksPerPass >= g.cb;
        for (int64_t gi = g0; gi < g1; ++gi) {
          const int64_t first = packed.groups[gi], filters = packed.groups[gi + 1] - first;
          const int64_t y_offset = (n * g.mb + first) * out_plane + q0 * kBlock;
          p.filters = static_cast<int>(filters);
          p.w = pointwise_weights(packed, c, k0, gi);
          // Next: this pass's next group, the next pass's first, or the next item's first (this
          // slice's again for the next run, slice by slice; else the next slice's).
          int64_t next_k0 = k0, next_gi = gi + 1;
          if (next_gi == g1) next_k0 += kInBlocksPerPass, next_gi = g0;
          if (next_k0 >= g.cb) {
            next_k0 = 0;
            next_gi = slice_major && run + 1 < runs ? g0 : slice + 1 < slices ? g1 : groups;
          }
          p.next_w = next_gi < groups ? pointwise_weights(packed, c, next_k0, next_gi) : nullptr;
          p.next_w_floats = next_gi < groups ? weight_floats(next_k0, next_gi) : 0;
          p.bias = bias ? bias + first * kBlock : nullptr;
          p.x = x + (n * g.cb + k0) * in_plane + in_pixel * kBlock;
          p.y = y + y_offset;
          p.residual = residual ? residual + y_offset : nullptr;
          kernel(p, q1 - q0);
        }
      }
      if (!r.clamp_only)
        for (int64_t b = packed.groups[g0]; b < packed.groups[g1]; ++b)
          r.epilogue.apply(y + (n * g.mb + b) * out_plane + q0 * kBlock, (q1 - q0) * kBlock,
                           nullptr, nullptr);
    }
  });
}

void run_depthwise(ThreadPool &pool, const Geometry &g, const PackedWeights &packed,
                   const ConvRun &r) {
  const float *x = r.x, *bias = r.bias, *residual = r.residual;
  float *y = r.y;
  const int64_t in_plane = g.h * g.w * kBlock, out_plane = g.oh * g.ow * kBlock;
  const int64_t taps = g.kh * g.kw;
  if (taps == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.oh == g.h && g.ow == g.w) {
    // A per-channel affine map (a batch norm folded into a 1x1 depthwise conv): one pass, no
    // padded copy; y = act(x * w + b + z), lane l of every pixel with channel l's w and b.
    pool.parallel_for(
        g.n * g.cb, std::max<int64_t>(1, 16384 / out_plane), [&](int64_t begin, int64_t end) {
          for (int64_t item = begin; item < end; ++item) {
            const int64_t b = item % g.cb;
            const float *w = packed.data.data() + b * kBlock, *src = x + item * in_plane;
            const float *z = residual ? residual + item * out_plane : nullptr;
            float *dst = y + item * out_plane;
            // w and b repeated over a tile of pixels, so the loop walks whole vectors of both.
            constexpr int64_t kTile = 8 * kBlock;
            float wt[kTile], bt[kTile];
            for (int64_t i = 0; i < kTile; ++i)
              wt[i] = w[i % kBlock], bt[i] = bias ? bias[b * kBlock + i % kBlock] : 0.0f;
            vec::run_best([&]() LUMEN_VEC_INLINE {
              for (int64_t q = 0; q < out_plane; q += kTile) {
                const int64_t len = std::min(kTile, out_plane - q);
                for (int64_t i = 0; i < len; ++i) {
                  float v = src[q + i] * wt[i] + bt[i];
                  if (z) v += z[q + i];
                  v = v < r.lo ? r.lo : v;  // NaN stays NaN
                  dst[q + i] = v > r.hi ? r.hi : v;
                }
              }
            });
            if (!r.clamp_only) r.epilogue.apply(dst, out_plane, nullptr, nullptr);
          }
        });
    return;
  }
  // Items: bands of output rows of one (image, block), their outputs about kBandBytes, so the
  // epilogue finds them in L1 and small maps with few blocks still spread over the threads.
  const ukernels::NchwcDepthwiseRow wide_row =
      nchwc_avx512() ? f32_nchwc_depthwise_row__avx512(g.kw, g.sw) : nullptr;
  const int64_t bands = ceil_div(g.oh, std::max<int64_t>(1, kBandBytes / (g.ow * kBlock * 4)));
  const int64_t band = ceil_div(g.oh, bands);  // even bands: 14 + 14 rows, not 18 + 10
  pool.parallel_for(g.n * g.cb * bands, 1, [&](int64_t begin, int64_t end) {
    thread_local AlignedFloats scratch;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t plane = item / bands, b = plane % g.cb;
      const int64_t row0 = item % bands * band, row1 = std::min(g.oh, row0 + band);
      ukernels::DepthwiseChannels d{};
      d.x = x + plane * in_plane;
      d.h = g.h, d.w = g.w, d.pt = g.pt, d.pl = g.pl;
      d.kh = g.kh, d.kw = g.kw, d.sh = g.sh, d.sw = g.sw, d.dh = g.dh, d.dw = g.dw;
      d.bias = bias ? bias + b * kBlock : nullptr;
      d.channels = static_cast<int>(kBlock);
      d.y = y + plane * out_plane;
      d.oh = g.oh, d.ow = g.ow, d.lo = r.lo, d.hi = r.hi;
      const float *wv = packed.data.data() + b * taps * kBlock;
      const float *z = residual ? residual + plane * out_plane : nullptr;
      if (nchwc_avx2()) {
        scratch.resize(ukernels::f32_depthwise_scratch(d, kBlock));
        f32_nchwc_depthwise__avx2(d, wv, z, row0, row1, scratch.data(), wide_row);
      } else {
        depthwise_portable(d, wv, z, row0, row1);
      }
      if (!r.clamp_only)
        r.epilogue.apply(d.y + row0 * g.ow * kBlock, (row1 - row0) * g.ow * kBlock, nullptr,
                         nullptr);
    }
  });
}

// Grouped (and dense) convs, any kernel. Taps read a zero-padded copy of the input ([cb][rows]
// [cols][8], the rows and columns every tap of every output reads), so none falls outside it; per
// work item (image, group, filter group, band of output rows) one conv-tile call per input pass
// sums all taps, its tiles spanning the band's rows.
// Where a conv group's weights fit in L2 (kBandCopyWeightBytes), each thread copies the rows of
// its items' band itself, once, and runs every filter group on them while they are in its caches:
// copied whole by all threads, half of every tile's scattered reads missed into the other core's
// cache (3x3 stride-2 128 -> 128 on 56x56 maps, 2 threads: 0.82x the time with band copies; 7x7
// 512 -> 512 by direct taps, whose weights do not fit, 1.03x). Larger weights are read once per
// run instead: the input is copied whole, once, and items go filter group by filter group.
void run_grouped(ThreadPool &pool, const Geometry &g, const PackedWeights &packed,
                 const ConvRun &r) {
  const float *x = r.x, *bias = r.bias, *residual = r.residual;
  float *y = r.y;
  const int64_t taps = g.kh * g.kw, cg = g.plain_c ? g.plain_c : g.cgb * kBlock;
  const int64_t rows = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  const int64_t cols = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  // A plain input is padded plane by plane: "pixels" of one float, planes of one channel.
  const int64_t lanes = g.plain_c ? 1 : kBlock, planes = g.plain_c ? g.plain_c : g.cb;
  const int64_t out_plane = g.oh * g.ow * kBlock, in_plane = g.h * g.w * lanes;
  const int64_t fgroups = static_cast<int64_t>(packed.groups.size()) - 1;
  // Bands of output rows as even as whole rows allow, in whole rounds over the threads where the
  // rows allow (bands of 9, 9, 9 and 1 rows on a 28-row map left a core idle).
  int64_t bands = ceil_div(g.oh, std::max<int64_t>(1, kPixelsPerItem / std::max<int64_t>(1, g.ow)));
  while ((g.n * g.group * fgroups * bands) % pool.size() != 0 && bands < g.oh) ++bands;
  const int64_t band = ceil_div(g.oh, bands);  // rows of the largest band
  const bool band_copies =
      !g.plain_c && g.mgb * kBlock * cg * taps * int64_t(sizeof(float)) <= kBandCopyWeightBytes;
  // The padded rows one plane of the copy holds: a band's, or all.
  const int64_t copy_rows =
      band_copies ? std::min(rows, (band - 1) * g.sh + (g.kh - 1) * g.dh + 1) : rows;
  const int64_t copy_plane = copy_rows * cols * lanes;
  // Padded row `row` of input plane `src` into d.
  const auto pad_row = [&](const float *src, int64_t row, float *d) {
    const int64_t ir = row - g.pt;
    if (ir < 0 || ir >= g.h) {
      std::fill(d, d + cols * lanes, 0.0f);
      return;
    }
    const int64_t c0 = std::min(g.pl, cols), c1 = std::clamp(g.pl + g.w, c0, cols);
    std::fill(d, d + c0 * lanes, 0.0f);
    std::copy_n(src + (ir * g.w + c0 - g.pl) * lanes, (c1 - c0) * lanes, d + c0 * lanes);
    std::fill(d + c1 * lanes, d + cols * lanes, 0.0f);
  };
  // The calling thread's buffer, read by every worker while parallel_for runs.
  thread_local AlignedFloats padded;
  float *whole = nullptr;  // the caller's copy: `padded` names each worker's own
  if (!band_copies) {
    padded.resize(static_cast<size_t>(checked_mul(g.n * planes, copy_plane)));
    whole = padded.data();
    pool.parallel_for(g.n * planes * rows, std::max<int64_t>(1, 4096 / (cols * lanes)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t item = begin; item < end; ++item)
                          pad_row(x + item / rows * in_plane, item % rows,
                                  whole + item / rows * copy_plane + item % rows * cols * lanes);
                      });
  }
  // Each thread's band copy, reused by its next items while they read the same band of this run.
  struct BandCopy {
    uint64_t run = 0;
    int64_t image_group = -1, band = -1;
    AlignedFloats data;
  };
  static std::atomic<uint64_t> runs{0};
  const uint64_t run = ++runs;
  // From the first tap, in the padded copy; a plain input's "taps" are (tap, channel) pairs, all
  // its channels in one pass.
  std::vector<int64_t> tap_offsets;
  for (int64_t a = 0; a < g.kh; ++a)
    for (int64_t b = 0; b < g.kw; ++b)
      for (int64_t k = 0; k < (g.plain_c ? cg : 1); ++k)
        tap_offsets.push_back((a * g.dh * cols + b * g.dw) * lanes + k * copy_plane);
  const int64_t passes = g.plain_c ? 1 : ceil_div(g.cgb, kInBlocksPerPass);
  // A band is one call per input pass, its tiles spanning output rows (whole tiles of 8 pixels
  // on a 7x7 map, not a tile of 4, 2 and 1 per row).
  const std::vector<int64_t> offsets = pixel_offsets(band, g.ow, g.sh * cols, g.sw, lanes);
  const auto kernel = tile_kernel().run;
  pool.parallel_for(g.n * g.group * fgroups * bands, 1, [&](int64_t begin, int64_t end) {
    // Declared here, where each worker passes: a thread_local declared outside the loop body is
    // never constructed (nor destroyed) on the workers that use it.
    thread_local BandCopy copy;
    for (int64_t item = begin; item < end; ++item) {
      // Band copies: items band by band, each band's filter groups in a row; else the reverse.
      const int64_t b = band_copies ? item / fgroups % bands : item % bands;
      const int64_t fg = band_copies ? item % fgroups : item / bands % fgroups;
      const int64_t image_group = item / (bands * fgroups);  // n * group + gg
      const int64_t n = image_group / g.group, gg = image_group % g.group;
      const int64_t i0 = g.oh * b / bands, i1 = g.oh * (b + 1) / bands;
      const int64_t first = packed.groups[fg], filters = packed.groups[fg + 1] - first;
      const float *group_input;
      if (band_copies) {
        if (copy.run != run || copy.image_group != image_group || copy.band != b) {
          copy.data.resize(static_cast<size_t>(g.cgb * copy_plane));
          const int64_t row0 = i0 * g.sh, count = std::min(copy_rows, rows - row0);
          for (int64_t k = 0; k < g.cgb; ++k)
            for (int64_t row = 0; row < count; ++row)
              pad_row(x + (n * g.cb + gg * g.cgb + k) * in_plane, row0 + row,
                      copy.data.data() + k * copy_plane + row * cols * kBlock);
          copy.run = run, copy.image_group = image_group, copy.band = b;
        }
        group_input = copy.data.data();
      } else {
        group_input = whole + (n * planes + gg * g.cgb * kBlock / lanes) * copy_plane +
                      i0 * g.sh * cols * lanes;
      }
      const int64_t out_block = n * g.mb + gg * g.mgb + first;
      ukernels::NchwcConvTile p{};
      p.x_block_stride = copy_plane * kBlock / lanes;
      p.pixel_offsets = offsets.data();
      p.taps = static_cast<int64_t>(tap_offsets.size());
      p.tap_offsets = tap_offsets.data();
      p.filters = static_cast<int>(filters);
      p.bias = bias ? bias + out_block % g.mb * kBlock : nullptr;
      p.y_block_stride = out_plane;
      p.lo = r.lo, p.hi = r.hi;
      const float *w = packed.data.data() + (gg * g.mgb + first) * kBlock * cg * taps;
      // Whether the next item (on this thread, usually) starts with the weights after these: the
      // next filter group's.
      const bool next_group = band_copies ? fg + 1 < fgroups : i1 == g.oh;
      for (int64_t pass = 0; pass < passes; ++pass) {
        const int64_t k0 = pass * kInBlocksPerPass;
        p.in_blocks = g.plain_c ? 0 : std::min(kInBlocksPerPass, g.cgb - k0);
        const int64_t channels = g.plain_c ? 1 : p.in_blocks * kBlock;
        p.w = w + k0 * kBlock * taps * filters * kBlock;
        p.w_tap_stride = channels * filters * kBlock;
        // The weights that follow: this item's next pass, or the next filter group's first.
        const bool next = pass + 1 < passes || next_group;
        p.next_w = next ? p.w + p.taps * p.w_tap_stride : nullptr;
        p.next_w_floats = next ? p.taps * p.w_tap_stride : 0;
        p.accumulate = pass > 0;
        p.last = pass + 1 == passes;
        p.x = group_input + k0 * p.x_block_stride;
        const int64_t at = out_block * out_plane + i0 * g.ow * kBlock;
        p.y = y + at;
        p.residual = residual ? residual + at : nullptr;
        kernel(p, (i1 - i0) * g.ow);
      }
      if (!r.clamp_only)
        for (int64_t f = 0; f < filters; ++f)
          r.epilogue.apply(y + (out_block + f) * out_plane + i0 * g.ow * kBlock,
                           (i1 - i0) * g.ow * kBlock, nullptr, nullptr);
    }
  });
}

// One depthwise band: output rows [r0, r1) of blocks [b0, b1) of image n, from t's rows
// [lo, lo + held) in `t` (each block's rows `plane` floats apart).
void depthwise_band(const Geometry &g, const PackedWeights &packed, const ConvRun &r, int64_t n,
                    int64_t b0, int64_t b1, const float *t, int64_t plane, int64_t lo, int64_t held,
                    int64_t r0, int64_t r1, ukernels::NchwcDepthwiseRow wide_row,
                    AlignedFloats &scratch) {
  for (int64_t b = b0; b < b1; ++b) {
    ukernels::DepthwiseChannels d{};
    // The band as a conv of its own on the held rows: padding above them where row lo is the
    // image's first and the band's first window starts above it.
    d.x = t + (b - b0) * plane;
    d.h = held, d.w = g.w, d.pt = g.pt - (r0 * g.sh - lo), d.pl = g.pl;
    d.kh = g.kh, d.kw = g.kw, d.sh = g.sh, d.sw = g.sw, d.dh = g.dh, d.dw = g.dw;
    d.bias = r.bias ? r.bias + b * kBlock : nullptr;
    d.channels = static_cast<int>(kBlock);
    d.y = r.y + ((n * g.mb + b) * g.oh + r0) * g.ow * kBlock;
    d.oh = r1 - r0, d.ow = g.ow, d.lo = r.lo, d.hi = r.hi;
    const float *wv = packed.data.data() + b * g.kh * g.kw * kBlock;
    if (nchwc_avx2()) {
      scratch.resize(ukernels::f32_depthwise_scratch(d, kBlock));
      f32_nchwc_depthwise__avx2(d, wv, nullptr, 0, r1 - r0, scratch.data(), wide_row);
    } else {
      depthwise_portable(d, wv, nullptr, 0, r1 - r0);
    }
    if (!r.clamp_only) r.epilogue.apply(d.y, (r1 - r0) * g.ow * kBlock, nullptr, nullptr);
  }
}

// A pointwise conv (geometry gp, stride 1) whose output t is a depthwise conv's input (gd). Work
// items: (image, slice of the pointwise filter groups, chunk of output rows), each walking its
// chunk in bands: per band, the t rows it reads that the previous band did not are made into the
// thread's scratch (every filter group of the slice, the input read where it lies), the rows both
// read move up, and the depthwise conv runs on the held rows. t never leaves the cache, and only
// a chunk's first band makes rows another chunk makes too. Chunks split the rows while they stay
// kMinChunkRows tall, slices the channels after that (small maps with many channels).
void run_pointwise_depthwise(ThreadPool &pool, const Geometry &gp, const Geometry &gd,
                             const PackedWeights &pointwise, const PackedWeights &depthwise,
                             const ConvRun &rp, const ConvRun &rd, int64_t band_rows) {
  const int64_t groups = static_cast<int64_t>(pointwise.groups.size()) - 1;
  const int64_t threads = pool.size();
  int64_t slices = 1, chunks = 1;
  const auto items = [&] { return gp.n * slices * chunks; };
  while (items() < threads || items() % threads != 0) {
    if (gd.oh / (chunks + 1) >= kMinChunkRows)
      ++chunks;
    else if (slices < groups)
      ++slices;
    else if (chunks < gd.oh)
      ++chunks;
    else
      break;
  }
  const std::vector<int64_t> slice_groups = even_slices(pointwise.groups, slices);
  int64_t slice_blocks = 0;  // the widest slice's
  for (int64_t s = 0; s < slices; ++s)
    slice_blocks = std::max(slice_blocks, pointwise.groups[size_t(slice_groups[size_t(s + 1)])] -
                                              pointwise.groups[size_t(slice_groups[size_t(s)])]);
  const int64_t window = (gd.kh - 1) * gd.dh + 1;  // t rows one output row reads
  const int64_t row_floats = gp.w * kBlock;
  const int64_t fitting = kExpandedRowsBytes / (slice_blocks * row_floats * int64_t(sizeof(float)));
  const int64_t band = std::min(
      gd.oh, band_rows > 0 ? band_rows : std::max<int64_t>(1, (fitting - window) / gd.sh + 1));
  const int64_t plane = ((band - 1) * gd.sh + window) * row_floats;  // rows a band reads, at most
  const int64_t in_plane = gp.h * row_floats, c = gp.cb * kBlock;
  const size_t scratch_floats = static_cast<size_t>(checked_mul(slice_blocks, plane));
  const auto kernel = tile_kernel().run;
  const ukernels::NchwcDepthwiseRow wide_row =
      nchwc_avx512() ? f32_nchwc_depthwise_row__avx512(gd.kw, gd.sw) : nullptr;
  pool.parallel_for(items(), 1, [&](int64_t begin, int64_t end) {
    thread_local AlignedFloats t, depthwise_scratch;  // here: see run_grouped
    t.resize(scratch_floats);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (slices * chunks), slice = item / chunks % slices;
      const int64_t chunk = item % chunks;
      const int64_t g0 = slice_groups[size_t(slice)], g1 = slice_groups[size_t(slice + 1)];
      const int64_t b0 = pointwise.groups[size_t(g0)], b1 = pointwise.groups[size_t(g1)];
      const int64_t chunk_end = gd.oh * (chunk + 1) / chunks;
      int64_t held_lo = 0, held_hi = 0;  // the t rows held: [held_lo, held_hi)
      for (int64_t r0 = gd.oh * chunk / chunks; r0 < chunk_end; r0 += band) {
        const int64_t r1 = std::min(chunk_end, r0 + band);
        // The t rows this band reads; bands go down the map, so lo never decreases.
        const int64_t lo = std::clamp(r0 * gd.sh - gd.pt, int64_t{0}, gp.h);
        const int64_t hi = std::clamp((r1 - 1) * gd.sh - gd.pt + window, lo, gp.h);
        const int64_t kept = std::max<int64_t>(0, held_hi - lo);
        if (kept > 0 && lo > held_lo)
          for (int64_t b = 0; b < b1 - b0; ++b) {
            float *rows = t.data() + b * plane;
            std::copy(rows + (lo - held_lo) * row_floats, rows + (held_hi - held_lo) * row_floats,
                      rows);
          }
        held_lo = lo, held_hi = hi;
        const int64_t made = lo + kept;  // the first row to make
        if (hi > made) {
          ukernels::NchwcConvTile p{};
          p.x_block_stride = in_plane;
          p.x_pixel_stride = kBlock;
          p.y_block_stride = plane;
          p.lo = rp.lo, p.hi = rp.hi;
          for (int64_t k0 = 0; k0 < gp.cb; k0 += kInBlocksPerPass) {
            p.in_blocks = std::min(kInBlocksPerPass, gp.cb - k0);
            p.accumulate = k0 > 0;
            p.last = k0 + kInBlocksPerPass >= gp.cb;
            p.x = rp.x + (n * gp.cb + k0) * in_plane + made * row_floats;
            for (int64_t gi = g0; gi < g1; ++gi) {
              const int64_t first = pointwise.groups[size_t(gi)];
              const int64_t filters = pointwise.groups[size_t(gi + 1)] - first;
              p.filters = static_cast<int>(filters);
              p.w = pointwise_weights(pointwise, c, k0, gi);
              p.bias = rp.bias ? rp.bias + first * kBlock : nullptr;
              p.y = t.data() + (first - b0) * plane + (made - lo) * row_floats;
              kernel(p, (hi - made) * gp.w);
            }
          }
          if (!rp.clamp_only)
            for (int64_t b = 0; b < b1 - b0; ++b)
              rp.epilogue.apply(t.data() + b * plane + (made - lo) * row_floats,
                                (hi - made) * row_floats, nullptr, nullptr);
        }
        depthwise_band(gd, depthwise, rd, n, b0, b1, t.data(), plane, lo, hi - lo, r0, r1, wide_row,
                       depthwise_scratch);
      }
    }
  });
}

void run_winograd(ThreadPool &pool, const Geometry &g, const cpu::NchwcWinogradWeights &weights,
                  const ConvRun &r) {
  const cpu::NchwcWinogradConv conv{.n = g.n,
                                    .cb = g.cb,
                                    .h = g.h,
                                    .w = g.w,
                                    .mb = g.mb,
                                    .oh = g.oh,
                                    .ow = g.ow,
                                    .pt = g.pt,
                                    .pl = g.pl,
                                    .x = r.x,
                                    .bias = r.bias,
                                    .residual = r.residual,
                                    .y = r.y,
                                    .lo = r.lo,
                                    .hi = r.hi,
                                    .epilogue = r.clamp_only ? nullptr : &r.epilogue,
                                    .tile = tile_kernel().run};
  cpu::nchwc_winograd_conv(pool, conv, weights);
}

void run_step(ThreadPool &pool, const Geometry &g, const PackedWeights &packed, const ConvRun &r) {
  if (packed.winograd) return run_winograd(pool, g, *packed.winograd, r);
  switch (g.kind) {
    case ConvKind::kDepthwise:
      return run_depthwise(pool, g, packed, r);
    case ConvKind::kPointwise:
      return run_pointwise(pool, g, packed, r);
    case ConvKind::kGrouped:
      return run_grouped(pool, g, packed, r);
  }
}

// Sets the clamp of r that its epilogue can be applied as in registers, +-inf otherwise.
void set_clamp(ConvRun &r) {
  r.clamp_only = r.epilogue.as_clamp(r.lo, r.hi);
  if (!r.clamp_only) r.lo = -std::numeric_limits<float>::infinity(), r.hi = -r.lo;
}

bool known(const Shape &s) {
  return s.rank() == 5 && std::none_of(s.begin(), s.end(), [](int64_t d) { return d < 1; });
}

// A dense 3x3 stride-1 undilated conv: Winograd can run it.
bool winograd_shape(const Attributes &attrs, const Shape &w) {
  const auto strides = attrs.get_ints("strides", {1, 1});
  const auto dilations = attrs.get_ints("dilations", {1, 1});
  return attrs.get_int("group", 1) == 1 && w[2] == 3 && w[3] == 3 && strides.size() == 2 &&
         strides[0] == 1 && strides[1] == 1 && dilations.size() == 2 && dilations[0] == 1 &&
         dilations[1] == 1;
}

// Packs the weights of the step's kind. A dense 3x3 stride-1 conv runs by Winograd or by direct
// taps, whichever measures faster for the step's shapes (kernel_choice.h); by the rule (Winograd
// from 32 input and output channels, where its transforms pay off) where they are not known.
std::shared_ptr<const void> prepare_nchwc_conv(const PrepareContext &ctx) {
  const Tensor *w = ctx.constant(1);
  if (!w || w->dtype() != DType::Float32 || w->rank() != 4 || ctx.input_shapes.empty())
    return nullptr;
  const int64_t group = ctx.attrs.get_int("group", 1), m = w->shape()[0], c = w->shape()[1];
  const ConvKind kind = kind_of(ctx.attrs, ctx.input_shapes[0], w->shape());
  // The kernel reports shapes it cannot run; the packing only needs whole blocks.
  if (group < 1 || m % group != 0 || (kind != ConvKind::kDepthwise && (m / group) % kBlock != 0))
    return nullptr;
  ctx.algorithm = kind == ConvKind::kDepthwise   ? "nchwc_depthwise"
                  : kind == ConvKind::kPointwise ? "nchwc_pointwise"
                                                 : "nchwc_grouped";
  const bool plain = ctx.input_shapes[0].rank() == 4;
  std::shared_ptr<PackedWeights> direct = pack(*w, group, kind, pass_channels(plain, c));
  if (kind != ConvKind::kGrouped || !winograd_shape(ctx.attrs, w->shape()) || c % kBlock != 0 ||
      ctx.input_shapes[0].rank() != 5)
    return direct;
  auto winograd = std::make_shared<PackedWeights>();
  winograd->winograd =
      cpu::nchwc_winograd_weights(w->data<float>(), m, c, filter_groups(m / kBlock));
  const size_t rule = c >= 32 && m >= 32 ? 0 : 1;
  const Shape &xs = ctx.input_shapes[0];
  const Shape ys = ctx.output_shapes.empty() ? Shape{} : ctx.output_shapes[0];
  size_t chosen = rule;
  if (known(xs) && known(ys) && xs[4] == kBlock && ys[4] == kBlock) {
    const Geometry g = geometry(xs, w->shape(), ys, ctx.attrs);
    ConvParams p{};
    p.n = g.n, p.c = c, p.h = g.h, p.w = g.w, p.m = m, p.oh = g.oh, p.ow = g.ow;
    chosen = choose_for_step(
        ctx, p, *w, {"nchwc_winograd", "nchwc_grouped"}, rule,
        [&](size_t i, ConvTiming &t, const Epilogue<float> &epilogue) {
          ConvRun r{.x = t.x.data(),
                    .bias = t.bias,
                    .residual = t.residual,
                    .y = t.y.data(),
                    .epilogue = epilogue};
          set_clamp(r);
          run_step(*ctx.pool, g, i == 0 ? *winograd : *direct, r);
        },
        [&](size_t i) {
          const AlignedFloats &weights = i == 0 ? winograd->winograd->u : direct->data;
          cpu::flush_from_caches(weights.data(), weights.capacity() * sizeof(float));
        });
    ctx.shape_specific = true;
  } else {
    ctx.algorithm = rule == 0 ? "nchwc_winograd (rule)" : "nchwc_grouped (rule)";
  }
  if (chosen == 0) return winograd;
  return direct;
}

void nchwc_conv(KernelContext &ctx) {
  const Geometry g = geometry_of(ctx);
  std::shared_ptr<PackedWeights> owned;
  const auto *packed = static_cast<const PackedWeights *>(ctx.prepared);
  if (!packed) {  // weights not constant, or an eager call
    owned = pack(ctx.input(1), g.group, g.kind, pass_channels(g.plain_c > 0, g.cgb * kBlock));
    packed = owned.get();
  }
  if (ctx.has_input(3) && ctx.input(3).numel() != ctx.output(0).numel())
    ctx.fail("residual z ", ctx.input(3).shape().to_string(), " does not match the output ",
             ctx.output(0).shape().to_string());
  const Epilogue<float> epilogue(ctx);
  ConvRun r{.x = ctx.input(0).data<float>(),
            .bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr,
            .residual = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr,
            .y = ctx.output(0).data<float>(),
            .epilogue = epilogue};
  set_clamp(r);
  run_step(ctx.pool, g, *packed, r);
}
struct PointwiseDepthwiseWeights {
  std::shared_ptr<PackedWeights> pointwise, depthwise;
};

std::shared_ptr<PointwiseDepthwiseWeights> pack_pointwise_depthwise(const Tensor &w1,
                                                                    const Tensor &w2) {
  auto packed = std::make_shared<PointwiseDepthwiseWeights>();
  packed->pointwise = pack(w1, 1, ConvKind::kPointwise, pass_channels(false, w1.shape()[1]));
  packed->depthwise = pack(w2, w2.shape()[0], ConvKind::kDepthwise, 0);
  return packed;
}

std::shared_ptr<const void> prepare_pointwise_depthwise(const PrepareContext &ctx) {
  const Tensor *w1 = ctx.constant(1), *w2 = ctx.constant(3);
  if (!w1 || !w2 || w1->dtype() != DType::Float32 || w2->dtype() != DType::Float32 ||
      w1->rank() != 4 || w2->rank() != 4 || w1->shape()[0] % kBlock != 0)
    return nullptr;
  return pack_pointwise_depthwise(*w1, *w2);
}

void nchwc_pointwise_depthwise(KernelContext &ctx) {
  const Attributes pointwise_attrs = pointwise_stage_attributes(ctx.attrs);
  const Attributes depthwise_attrs = depthwise_stage_attributes(ctx.attrs);
  const Shape &x = ctx.input(0).shape(), &w1 = ctx.input(1).shape(), &w2 = ctx.input(3).shape();
  const Shape &y = ctx.output(0).shape();
  if (x.rank() != 5 || x[4] != kBlock || y.rank() != 5 || y[4] != kBlock || w1[0] % kBlock != 0 ||
      w1[1] != x[1] * kBlock)
    ctx.fail("the CPU kernel takes block ", kBlock,
             " and whole blocks of channels only; got input ", x.to_string(), ", weight w1 ",
             w1.to_string(), ", output ", y.to_string());
  const Shape t{x[0], w1[0] / kBlock, x[2], x[3], kBlock};
  const Geometry gp = geometry(x, w1, t, pointwise_attrs), gd = geometry(t, w2, y, depthwise_attrs);
  if (gp.kind != ConvKind::kPointwise || gp.sh != 1 || gp.sw != 1 ||
      gd.kind != ConvKind::kDepthwise)
    ctx.fail("expected a stride-1 pointwise conv and a depthwise conv; got weights ",
             w1.to_string(), " and ", w2.to_string());
  std::shared_ptr<PointwiseDepthwiseWeights> owned;
  const auto *packed = static_cast<const PointwiseDepthwiseWeights *>(ctx.prepared);
  if (!packed) {  // weights not constant, or an eager call
    owned = pack_pointwise_depthwise(ctx.input(1), ctx.input(3));
    packed = owned.get();
  }
  const Epilogue<float> pointwise_epilogue(pointwise_attrs, ctx.op, ctx.node);
  const Epilogue<float> depthwise_epilogue(depthwise_attrs, ctx.op, ctx.node);
  ConvRun rp{.x = ctx.input(0).data<float>(),
             .bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr,
             .residual = nullptr,
             .y = nullptr,
             .epilogue = pointwise_epilogue};
  ConvRun rd{.x = nullptr,
             .bias = ctx.has_input(4) ? ctx.input(4).data<float>() : nullptr,
             .residual = nullptr,
             .y = ctx.output(0).data<float>(),
             .epilogue = depthwise_epilogue};
  set_clamp(rp);
  set_clamp(rd);
  run_pointwise_depthwise(ctx.pool, gp, gd, *packed->pointwise, *packed->depthwise, rp, rd,
                          ctx.attrs.get_int(std::string(kPointwiseDepthwiseBandRowsAttr), 0));
}

// [N, C, H, W] <-> [N, C / 8, H, W, 8], one (image, channel block) per work item.
void reorder(KernelContext &ctx, bool to_blocked) {
  const Shape &blocked = to_blocked ? ctx.output(0).shape() : ctx.input(0).shape();
  if (blocked.rank() != 5 || blocked[4] != kBlock)
    ctx.fail("the CPU kernel takes block ", kBlock, " only; got ", blocked.to_string());
  const int64_t pixels = blocked[2] * blocked[3], block_floats = pixels * kBlock;
  const float *x = ctx.input(0).data<float>();
  float *y = ctx.output(0).data<float>();
  ctx.pool.parallel_for(blocked[0] * blocked[1], std::max<int64_t>(1, 16384 / block_floats + 1),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t item = begin; item < end; ++item) {
                            const float *src = x + item * block_floats;
                            float *dst = y + item * block_floats;
                            if (nchwc_avx2() && to_blocked)
                              f32_to_nchw8c__avx2(src, pixels, pixels, dst);
                            else if (nchwc_avx2())
                              f32_from_nchw8c__avx2(src, pixels, dst, pixels);
                            else
                              for (int64_t q = 0; q < pixels; ++q)
                                for (int64_t l = 0; l < kBlock; ++l) {
                                  if (to_blocked)
                                    dst[q * kBlock + l] = src[l * pixels + q];
                                  else
                                    dst[l * pixels + q] = src[q * kBlock + l];
                                }
                          }
                        });
}

void to_nchwc(KernelContext &ctx) {
  reorder(ctx, true);
}
void from_nchwc(KernelContext &ctx) {
  reorder(ctx, false);
}

LUMEN_REGISTER_KERNEL("cpu", "nchwc_conv", nchwc_conv, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "nchwc_conv", prepare_nchwc_conv, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "nchwc_pointwise_depthwise", nchwc_pointwise_depthwise,
                      DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "nchwc_pointwise_depthwise", prepare_pointwise_depthwise,
                       DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "to_nchwc", to_nchwc, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "from_nchwc", from_nchwc, DType::Float32);

}  // namespace
}  // namespace lumen
