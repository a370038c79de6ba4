// CPU conv2d and fused_conv (float32). Each (image, group) is one GEMM on Lumen's own GEMM
// (gemm/sgemm.h): Y[mg, oh * ow] = W[mg, cg * kh * kw] * im2col(X). The weights are packed once
// when the model is compiled (the prepare function below); the im2col matrix is never built
// whole: the GEMM packs its panels straight from the input (im2col_panels.h), or, for most
// stride-1 and stride-2 convs, from a zero-padded copy of the input (padded_image.h, stride 2
// split into parity planes so its rows are contiguous); a 1x1 / stride-1 / unpadded conv reads the
// input as the B matrix it already is. Convs with one input channel per group (depthwise) run in
// depthwise_conv.cc. float64 convs run on the reference backend.
//
// Threading: each thread takes whole (image, group) items when they spread evenly over the threads
// or are too small to split; otherwise the items run one after another, each GEMM over the pool.
//
// Convs whose taps mostly read padding (dilated convs on small maps) run one GEMM per output window
// with only the taps that window reads (conv_tap_windows.h).
//
// fused_conv adds the bias, a residual and an activation (backends/common/epilogue.h): the
// micro-kernel does it as it stores each tile when the activation is none, relu or clip; for the
// others, a finish hook does it to each block of output right after the GEMM finished it.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernel_choice.h"
#include "backends/cpu/kernels/conv_choice.h"
#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/kernels/conv_tap_windows.h"
#include "backends/cpu/kernels/depthwise_conv.h"
#include "backends/cpu/kernels/grouped_conv.h"
#include "backends/cpu/kernels/im2col_panels.h"
#include "backends/cpu/kernels/padded_image.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// How a (non-depthwise) conv runs. kRule: by the thresholds in rule_algorithm; the others are
// forced, by a compile-time measurement (prepare_conv) or to time a candidate.
enum class ConvAlgorithm : uint8_t {
  kRule,
  kWinograd,
  kWindows,
  kGemv,
  kGroupLanes,
  kGemmGrid,
  kGemm
};

// The weights of every group as packed GEMM A operands, or (3x3 convs that qualify) as
// Winograd-transformed operands, or per tap window (convs whose taps mostly read padding) the
// weights of that window's taps; built once per compiled step.
struct PackedConvWeights {
  std::vector<cpu::PackedA> groups;
  std::shared_ptr<cpu::WinogradWeights> winograd;
  std::vector<cpu::TapWindow> windows;
  std::vector<float> group_lanes;  // grouped convs with few channels per group (grouped_conv.h)
  std::vector<std::vector<cpu::PackedA>> window_groups;  // [window][group]; none for empty taps
  int64_t window_h = 0, window_w = 0;                    // the input size the windows are for
  // Chosen at compile time (by measurement where that is on) for inputs of this batch and size.
  ConvAlgorithm algorithm = ConvAlgorithm::kRule;
  DepthwiseAlgorithm depthwise = DepthwiseAlgorithm::kRule;
  int64_t chosen_n = -1, chosen_h = -1, chosen_w = -1;
  bool chosen_for(const ConvParams &p) const {
    return p.n == chosen_n && p.h == chosen_h && p.w == chosen_w;
  }
};

// Packs, for every window and group, the weights of the window's taps: W[m, c, taps...] as an
// [mg, cg * tap_rows * tap_cols] matrix.
void pack_windows(PackedConvWeights &packed, const ConvParams &p, const float *w,
                  const cpu::F32GemmMicrokernel &kernel) {
  const int64_t k = p.cg * p.kh * p.kw;
  for (const cpu::TapWindow &win : packed.windows) {
    auto &groups = packed.window_groups.emplace_back();
    if (win.tap_rows == 0 || win.tap_cols == 0) continue;
    const int64_t kw = p.cg * win.tap_rows * win.tap_cols;
    std::vector<float> sliced(static_cast<size_t>(p.mg * kw));
    for (int64_t g = 0; g < p.group; ++g) {
      float *dst = sliced.data();
      for (int64_t m = 0; m < p.mg; ++m)
        for (int64_t c = 0; c < p.cg; ++c)
          for (int64_t a = 0; a < win.tap_rows; ++a)
            for (int64_t b = 0; b < win.tap_cols; ++b)
              *dst++ =
                  w[(g * p.mg + m) * k + (c * p.kh + win.tap_row0 + a) * p.kw + win.tap_col0 + b];
      groups.emplace_back(cpu::StridedA(sliced.data(), kw, false), p.mg, kw, kernel);
    }
  }
}

ConvParams conv_params(const Shape &x, const Shape &w, const Shape &y, const Attributes &attrs) {
  const auto strides = attrs.get_ints("strides", {1, 1});
  const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = attrs.get_ints("dilations", {1, 1});
  ConvParams p{};
  p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
  p.m = w[0], p.cg = w[1], p.kh = w[2], p.kw = w[3];
  p.oh = y[2], p.ow = y[3];
  p.group = attrs.get_int("group", 1);
  p.sh = strides.at(0), p.sw = strides.at(1), p.pt = pads.at(0), p.pl = pads.at(1);
  p.dh = dilations.at(0), p.dw = dilations.at(1);
  p.mg = p.group > 0 ? p.m / p.group : 0;
  return p;
}

// The input pixel each output of a 1x1 conv reads, per channel: [cg, oh * ow] (0 in padding).
std::vector<float> sample_pixels(const ConvParams &p, const float *xg) {
  std::vector<float> out(static_cast<size_t>(p.cg * p.oh * p.ow));
  float *dst = out.data();
  for (int64_t c = 0; c < p.cg; ++c)
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      const int64_t iy = oy * p.sh - p.pt;
      const float *row = iy >= 0 && iy < p.h ? xg + (c * p.h + iy) * p.w : nullptr;
      for (int64_t ox = 0; ox < p.ow; ++ox, ++dst) {
        const int64_t ix = ox * p.sw - p.pl;
        *dst = row && ix >= 0 && ix < p.w ? row[ix] : 0.0f;
      }
    }
  return out;
}

// A 1x1 conv on a 1x1 map (squeeze-and-excitation's two layers) is a matrix-vector product per
// image and group: as a GEMM it packs a 16-column panel for its one column. Rows of W in
// parallel, each a vectorized dot product; the epilogue over each run of output channels.
void conv2d_as_gemv(ThreadPool &pool, const ConvParams &p, const float *x, const float *w,
                    const float *bias, const float *residual, const Epilogue<float> &epilogue,
                    float *y) {
  const int64_t rows = p.n * p.m;
  pool.parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, p.cg)),
                    [&](int64_t begin, int64_t end) {
                      vec::run_best([&]() LUMEN_VEC_INLINE {
                        for (int64_t r = begin; r < end; ++r) {
                          const int64_t n = r / p.m, m = r % p.m, g = m / p.mg;
                          const float *wm = w + m * p.cg, *xg = x + n * p.c + g * p.cg;
                          // Eight partial sums (one vector) so the loop vectorizes without
                          // reassociating a single sum.
                          float part[8] = {};
                          int64_t c = 0;
                          for (; c + 8 <= p.cg; c += 8)
                            for (int j = 0; j < 8; ++j) part[j] += wm[c + j] * xg[c + j];
                          float sum = 0.0f;
                          for (; c < p.cg; ++c) sum += wm[c] * xg[c];
                          for (int j = 0; j < 8; ++j) sum += part[j];
                          y[r] = sum;
                        }
                      });
                      // Runs of one image's channels: bias and residual line up with y.
                      for (int64_t r = begin; r < end;) {
                        const int64_t m = r % p.m, count = std::min(end - r, p.m - m);
                        epilogue.apply(y + r, count, bias ? bias + m : nullptr,
                                       residual ? residual + r : nullptr);
                        r += count;
                      }
                    });
}

// One GEMM per tap window and (image, group), with only the window's taps, into a scratch block
// copied to the window's place; then the epilogue over each output channel.
void conv2d_by_windows(ThreadPool &pool, const ConvParams &p, const PackedConvWeights &packed,
                       const float *x, const float *bias, const float *residual,
                       const Epilogue<float> &epilogue, float *y) {
  const int64_t in_plane = p.h * p.w, out_plane = p.oh * p.ow;
  const auto &kernel = cpu::default_f32_gemm_microkernel();
  const bool has_epilogue = bias || residual || epilogue.has_activation();
  std::vector<float> scratch;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t g = 0; g < p.group; ++g) {
      const float *xg = x + (n * p.c + g * p.cg) * in_plane;
      const int64_t y_offset = (n * p.m + g * p.mg) * out_plane;
      float *yg = y + y_offset;
      for (size_t i = 0; i < packed.windows.size(); ++i) {
        const cpu::TapWindow &win = packed.windows[i];
        const int64_t cols = win.rows * win.cols;
        const bool reads = !packed.window_groups[i].empty();
        if (reads) {
          const ConvParams q = win.params(p);
          const cpu::Im2colB b(q, xg);
          scratch.resize(static_cast<size_t>(p.mg * cols));
          cpu::sgemm(pool, p.mg, cols, p.cg * q.kh * q.kw, packed.window_groups[i][g], b,
                     scratch.data(), cols, {.kernel = &kernel});
        }
        for (int64_t m = 0; m < p.mg; ++m)
          for (int64_t r = 0; r < win.rows; ++r) {
            float *dst = yg + m * out_plane + (win.row0 + r) * p.ow + win.col0;
            if (reads)
              std::copy_n(scratch.data() + m * cols + r * win.cols, win.cols, dst);
            else
              std::fill_n(dst, win.cols, 0.0f);  // every tap reads padding
          }
      }
      if (!has_epilogue) continue;
      const float *zg = residual ? residual + y_offset : nullptr;
      for (int64_t m = 0; m < p.mg; ++m)
        epilogue.apply_scalar_bias(yg + m * out_plane, out_plane, bias ? bias[g * p.mg + m] : 0.0f,
                                   zg ? zg + m * out_plane : nullptr);
    }
}

// One GEMM per (image, group) item, over a padded grid of the input or im2col panels of it (a
// 1x1 conv's input is its B as it stands).
void gemm_conv2d(ThreadPool &pool, const ConvParams &p, const PackedConvWeights *packed,
                 const float *x, const float *w, const float *bias, const float *residual,
                 const Epilogue<float> &epilogue, float *y, bool padded_grid) {
  const int64_t in_plane = checked_mul(p.h, p.w), out_plane = checked_mul(p.oh, p.ow);
  const int64_t k = checked_mul(checked_mul(p.cg, p.kh), p.kw, "conv2d GEMM depth");
  const bool one_by_one = p.kh == 1 && p.kw == 1;
  const bool pointwise =
      one_by_one && p.sh == 1 && p.sw == 1 && p.pt == 0 && p.pl == 0 && p.oh == p.h && p.ow == p.w;
  const cpu::F32GemmMicrokernel &kernel = cpu::default_f32_gemm_microkernel();
  if (packed && packed->groups.empty()) packed = nullptr;  // Winograd or windows: shapes changed
  const bool has_epilogue = bias || residual || epilogue.has_activation();
  // Bias and residual plus none, relu or clip are applied by the micro-kernel as it stores each
  // tile; other activations by the finish hook, one more pass over each block.
  float lo = 0, hi = 0;
  const bool store_epilogue = has_epilogue && epilogue.as_clamp(lo, hi);
  const int64_t items = checked_mul(p.n, p.group);

  auto run_item = [&](int64_t item, int64_t max_threads) {
    const int64_t n = item / p.group, g = item % p.group;
    const float *xg = x + (n * p.c + g * p.cg) * in_plane;
    const int64_t y_offset = (n * p.m + g * p.mg) * out_plane;
    float *yg = y + y_offset;
    const float *bg = bias ? bias + g * p.mg : nullptr;
    const float *zg = residual ? residual + y_offset : nullptr;
    const cpu::StridedA plain_a(w + g * p.mg * k, k, false);
    const cpu::GemmA &a = packed ? static_cast<const cpu::GemmA &>(packed->groups[g]) : plain_a;
    const ukernels::TileEpilogue tile_epilogue{bg, nullptr, lo, hi, zg};
    const ukernels::TileEpilogue *gemm_epilogue = store_epilogue ? &tile_epilogue : nullptr;
    // The epilogue on `count` outputs of channel m starting at index `out` of its plane.
    auto finish_outputs = [&](int64_t m, int64_t out, int64_t count) {
      epilogue.apply_scalar_bias(yg + m * out_plane + out, count, bg ? bg[m] : 0.0f,
                                 zg ? zg + m * out_plane + out : nullptr);
    };
    // Stride-1 convs and shallow stride-2 ones (first layers): the GEMM runs on the padded grid
    // and the micro-kernels store only its valid columns, straight into y (grid columns, see
    // ukernels/f32_gemm.h); a finish hook's blocks are in grid columns.
    if (padded_grid) {
      const cpu::PaddedImage image(pool, p, xg);
      const int64_t wp = image.grid_width();
      const ukernels::GridColumns grid{wp, p.ow, 0};
      // Grid columns [j0, j1) land on one contiguous range of each output plane (the kept
      // columns are packed): one epilogue call per channel, not one per output row.
      const cpu::GemmFinish finish = [&](int64_t m0, int64_t m1, int64_t j0, int64_t j1) {
        const int64_t out = ukernels::kept_before(grid, j0);
        const int64_t count = ukernels::kept_before(grid, j1) - out;
        for (int64_t m = m0; m < m1; ++m) finish_outputs(m, out, count);
      };
      cpu::sgemm(pool, p.mg, image.columns(), k, a, image.b(), yg, out_plane,
                 {.max_threads = max_threads,
                  .finish = has_epilogue && !store_epilogue ? &finish : nullptr,
                  .kernel = &kernel,
                  .epilogue = gemm_epilogue,
                  .grid = &grid});
      return;
    }
    // Pointwise convs pack B although a micro-kernel could read the planes in place: rows a
    // whole plane apart fall into few L1 sets (56x56: 16 of 64) and thrash it, 1.8x slower.
    // Other 1x1 convs (strided: ResNet and RegNet shortcuts) read one pixel per output: copied
    // once into [cg, oh * ow], they are pointwise too, not im2col panels gathered with a stride.
    std::vector<float> sampled;
    if (one_by_one && !pointwise) sampled = sample_pixels(p, xg);
    const cpu::StridedB plain_b(pointwise ? xg : sampled.data(), pointwise ? in_plane : out_plane,
                                false);
    const cpu::Im2colB im2col_b(p, xg);
    const cpu::GemmB &b = one_by_one ? static_cast<const cpu::GemmB &>(plain_b)
                                     : static_cast<const cpu::GemmB &>(im2col_b);
    const cpu::GemmFinish finish = [&](int64_t m0, int64_t m1, int64_t j0, int64_t j1) {
      for (int64_t m = m0; m < m1; ++m) finish_outputs(m, j0, j1 - j0);
    };
    cpu::sgemm(pool, p.mg, out_plane, k, a, b, yg, out_plane,
               {.max_threads = max_threads,
                .finish = has_epilogue && !store_epilogue ? &finish : nullptr,
                .kernel = &kernel,
                .epilogue = gemm_epilogue});
  };

  // Whole items per thread when they spread evenly (the busiest thread at most 1/8 over an equal
  // share), even where one item could use every thread: no GEMM split to synchronize, and each
  // thread packs only its own image's B. Batch 2 at 2 threads, in-process A/B: MNASNet 0.95x,
  // MobileNetV3-small 0.93-0.96x, ShuffleNetV2 0.92-0.96x, DenseNet-121 0.96-0.98x the time,
  // ResNet-18 and EfficientNet-B0 unchanged.
  const int64_t threads = pool.size();
  const int64_t per_thread = (items + threads - 1) / threads;
  const bool items_spread_evenly = items >= threads && 8 * per_thread * threads <= 9 * items;
  const int64_t threads_per_item = cpu::gemm_threads(pool, p.mg, out_plane, k);
  if (items > 1 && (threads_per_item < threads || items_spread_evenly)) {
    pool.parallel_for(items, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) run_item(item, 1);
    });
  } else {
    for (int64_t item = 0; item < items; ++item) run_item(item, 0);
  }
}

// The algorithm the fixed thresholds pick: Winograd where its weights were prepared for this
// image size, tap windows for convs mostly reading padding, a GEMV for 1x1 maps, 8 output
// channels in lanes for grouped convs with few channels per group, else a GEMM over the padded
// grid where it costs few extra lanes (PaddedImage::worthwhile), over im2col panels otherwise.
ConvAlgorithm rule_algorithm(const ConvParams &p, const PackedConvWeights *packed) {
  if (packed && packed->winograd && cpu::winograd_applies(p)) return ConvAlgorithm::kWinograd;
  if (packed && !packed->windows.empty() && packed->window_h == p.h && packed->window_w == p.w)
    return ConvAlgorithm::kWindows;
  if (p.oh * p.ow == 1 && p.kh == 1 && p.kw == 1 && p.h == 1 && p.w == 1)
    return ConvAlgorithm::kGemv;
  if (cpu::grouped_conv_in_lanes_applies(p.group, p.cg, p.mg, p.kh * p.kw))
    return ConvAlgorithm::kGroupLanes;
  return cpu::PaddedImage::worthwhile(p, cpu::default_f32_gemm_microkernel())
             ? ConvAlgorithm::kGemmGrid
             : ConvAlgorithm::kGemm;
}

void run_conv2d(ThreadPool &pool, const ConvParams &p, const PackedConvWeights *packed,
                const float *x, const float *w, const float *bias, const float *residual,
                const Epilogue<float> &epilogue, float *y, ConvAlgorithm algorithm) {
  if (algorithm == ConvAlgorithm::kRule) algorithm = rule_algorithm(p, packed);
  switch (algorithm) {
    case ConvAlgorithm::kWinograd:
      return cpu::winograd_conv2d(pool, p, x, *packed->winograd, bias, residual, epilogue, y);
    case ConvAlgorithm::kWindows:
      return conv2d_by_windows(pool, p, *packed, x, bias, residual, epilogue, y);
    case ConvAlgorithm::kGemv:
      return conv2d_as_gemv(pool, p, x, w, bias, residual, epilogue, y);
    case ConvAlgorithm::kGroupLanes: {
      // Weights rearranged at compile time, or now when they are not constant.
      const bool prepared = packed && !packed->group_lanes.empty();
      const std::vector<float> computed =
          prepared ? std::vector<float>()
                   : cpu::grouped_conv_lane_weights(w, p.m, p.cg, p.kh * p.kw);
      return cpu::grouped_conv_in_lanes(pool, p, x,
                                        prepared ? packed->group_lanes.data() : computed.data(),
                                        bias, residual, epilogue, y);
    }
    case ConvAlgorithm::kGemmGrid:
    case ConvAlgorithm::kGemm:
    case ConvAlgorithm::kRule:
      break;
  }
  gemm_conv2d(pool, p, packed, x, w, bias, residual, epilogue, y,
              algorithm == ConvAlgorithm::kGemmGrid);
}

// conv2d when `residual` is nullptr and `epilogue` has no activation; fused_conv otherwise.
void conv2d_with_epilogue(KernelContext &ctx, const float *residual,
                          const Epilogue<float> &epilogue) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  const Tensor &ty = ctx.output(0);
  const ConvParams p = conv_params(tx.shape(), tw.shape(), ty.shape(), ctx.attrs);
  if (p.group < 1 || p.c != p.cg * p.group || p.m % p.group != 0)
    ctx.fail("channels do not match: input ", tx.shape().to_string(), ", weight ",
             tw.shape().to_string(), ", group ", p.group);
  if (ty.numel() == 0) return;

  const float *x = tx.data<float>();
  const float *w = tw.data<float>();
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float *y = ty.data<float>();
  const auto *packed = static_cast<const PackedConvWeights *>(ctx.prepared);
  const bool chosen = packed && packed->chosen_for(p);
  if (p.cg == 1)
    return depthwise_conv2d(ctx.pool, p, x, w, bias, residual, epilogue, y,
                            chosen ? packed->depthwise : DepthwiseAlgorithm::kRule);
  run_conv2d(ctx.pool, p, packed, x, w, bias, residual, epilogue, y,
             chosen ? packed->algorithm : ConvAlgorithm::kRule);
}

void conv2d(KernelContext &ctx) {
  conv2d_with_epilogue(ctx, nullptr, Epilogue<float>());
}

// fused_conv(x, w, b?, z?): act(conv2d(x, w) + b + z).
void fused_conv(KernelContext &ctx) {
  const Tensor *z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (z && z->shape() != ctx.output(0).shape())
    ctx.fail("residual z ", z->shape().to_string(), " does not match the output ",
             ctx.output(0).shape().to_string());
  conv2d_with_epilogue(ctx, z ? z->data<float>() : nullptr, Epilogue<float>(ctx));
}

// The conv's parameters for the step's input shape, when its height and width are known (the
// batch may not be) and the attributes are well formed.
std::optional<ConvParams> known_params(const PrepareContext &ctx, const Shape &ws) {
  const Shape &xs = ctx.input_shapes.at(0);
  if (xs.rank() != 4 || xs[1] == kUnknownDim || xs[2] == kUnknownDim || xs[3] == kUnknownDim)
    return std::nullopt;
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  if (pads.size() != 4 || strides.size() != 2 || dilations.size() != 2) return std::nullopt;
  // Inference checks these when the model runs; a graph compiled with unknown input dims reaches
  // this before it does (a fuzzed dilation of 0 divided by zero here).
  for (size_t i = 0; i < 2; ++i)
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[i + 2] < 0) return std::nullopt;
  const Shape ys{xs[0], ws[0],
                 (xs[2] + pads[0] + pads[2] - dilations[0] * (ws[2] - 1) - 1) / strides[0] + 1,
                 (xs[3] + pads[1] + pads[3] - dilations[1] * (ws[3] - 1) - 1) / strides[1] + 1};
  if (ys[2] < 1 || ys[3] < 1) return std::nullopt;
  return conv_params(xs, ws, ys, ctx.attrs);
}

// Chooses among the algorithms that can run this (non-depthwise) conv and records the choice in
// `packed`, whose operands must include every candidate's.
void choose_conv_algorithm(const PrepareContext &ctx, const ConvParams &p, const Tensor &w,
                           PackedConvWeights &packed) {
  std::vector<ConvAlgorithm> options;
  std::vector<std::string> names;
  const auto option = [&](ConvAlgorithm algorithm, const char *name) {
    options.push_back(algorithm), names.emplace_back(name);
  };
  if (packed.winograd) option(ConvAlgorithm::kWinograd, "winograd");
  if (!packed.group_lanes.empty()) option(ConvAlgorithm::kGroupLanes, "group_lanes");
  if (cpu::PaddedImage::grid_width_for(p) > 0) option(ConvAlgorithm::kGemmGrid, "gemm_grid");
  option(ConvAlgorithm::kGemm, "gemm");
  const ConvAlgorithm rule = rule_algorithm(p, &packed);
  const size_t rule_index =
      static_cast<size_t>(std::find(options.begin(), options.end(), rule) - options.begin());
  const size_t chosen =
      choose_for_step(ctx, p, w, names, std::min(rule_index, options.size() - 1),
                      [&](size_t i, ConvTiming &t, const Epilogue<float> &epilogue) {
                        run_conv2d(*ctx.pool, p, &packed, t.x.data(), w.data<float>(), t.bias,
                                   t.residual, epilogue, t.y.data(), options[i]);
                      });
  packed.algorithm = options[chosen];
  packed.chosen_n = p.n, packed.chosen_h = p.h, packed.chosen_w = p.w;
}

// The same for a depthwise conv: channels in lanes or plane by plane. False where only planes
// can run it.
bool choose_depthwise_algorithm(const PrepareContext &ctx, const ConvParams &p, const Tensor &w,
                                PackedConvWeights &packed) {
  if (!depthwise_lanes_available(p)) {
    ctx.algorithm = "depthwise_planes (only algorithm)";
    return false;
  }
  const DepthwiseAlgorithm options[] = {DepthwiseAlgorithm::kLanes, DepthwiseAlgorithm::kPlanes};
  const size_t chosen = choose_for_step(
      ctx, p, w, {"depthwise_lanes", "depthwise_planes"}, depthwise_lanes_pay_off(p) ? 0 : 1,
      [&](size_t i, ConvTiming &t, const Epilogue<float> &epilogue) {
        depthwise_conv2d(*ctx.pool, p, t.x.data(), w.data<float>(), t.bias, t.residual, epilogue,
                         t.y.data(), options[i]);
      });
  packed.depthwise = options[chosen];
  packed.chosen_n = p.n, packed.chosen_h = p.h, packed.chosen_w = p.w;
  return true;
}

// Packs a constant weight [M, C/group, KH, KW] for the algorithms that can run the conv at the
// step's image size: Winograd operands, per-window GEMM operands, weights in lanes for grouped
// convs, one GEMM A operand per group. Where the input's shape is known in full and several
// algorithms apply, they are timed here (kernel_choice.h) and only the fastest one's operands are
// kept.
std::shared_ptr<const void> prepare_conv(const PrepareContext &ctx) {
  const Tensor *w = ctx.constant(1);
  if (!w || w->dtype() != DType::Float32 || w->rank() != 4) return nullptr;
  const int64_t group = ctx.attrs.get_int("group", 1);
  const int64_t m = w->shape()[0];
  if (group < 1 || m % group != 0) return nullptr;
  auto packed = std::make_shared<PackedConvWeights>();
  ctx.shape_specific = true;  // algorithms and operands chosen for the image size
  const std::optional<ConvParams> p = known_params(ctx, w->shape());
  const bool conv_channels_match = p && p->c == p->cg * p->group;
  if (w->shape()[1] == 1) {  // depthwise: direct loops, no operands to prepare
    const bool chosen = conv_channels_match && p->n != kUnknownDim &&
                        choose_depthwise_algorithm(ctx, *p, *w, *packed);
    return chosen ? packed : nullptr;
  }
  if (conv_channels_match && !cpu::winograd_applies(*p)) {
    packed->windows = cpu::tap_windows(*p);
    if (!packed->windows.empty()) {
      packed->window_h = p->h, packed->window_w = p->w;
      pack_windows(*packed, *p, w->data<float>(), cpu::default_f32_gemm_microkernel());
      ctx.algorithm = "tap_windows (rule: most taps read padding)";
      return packed;
    }
  }
  // Winograd operands where the rule takes it, or (measuring) wherever it can run.
  const bool measuring = conv_channels_match && p->n != kUnknownDim && cpu::calibration_enabled();
  if (conv_channels_match &&
      (cpu::winograd_applies(*p) || (measuring && cpu::winograd_possible(*p))))
    packed->winograd = cpu::winograd_weights(w->data<float>(), m, p->cg);
  const int64_t mg = m / group, k = w->numel() / m;
  const int64_t cg = w->shape()[1], taps = w->shape()[2] * w->shape()[3];
  if (cpu::grouped_conv_in_lanes_applies(group, cg, mg, taps))
    packed->group_lanes = cpu::grouped_conv_lane_weights(w->data<float>(), m, cg, taps);
  const bool gemv = conv_channels_match && rule_algorithm(*p, packed.get()) == ConvAlgorithm::kGemv;
  if (gemv) ctx.algorithm = "gemv (rule: 1x1 map)";
  const bool choose = conv_channels_match && p->n != kUnknownDim && !gemv;
  if (choose || (!packed->winograd && packed->group_lanes.empty())) {
    const auto &kernel = cpu::default_f32_gemm_microkernel();
    for (int64_t g = 0; g < group; ++g)
      packed->groups.emplace_back(cpu::StridedA(w->data<float>() + g * mg * k, k, false), mg, k,
                                  kernel);
  }
  if (choose) {
    choose_conv_algorithm(ctx, *p, *w, *packed);
    // Only the chosen algorithm's operands stay (the GEMM's also serve other image sizes).
    if (packed->algorithm != ConvAlgorithm::kWinograd) packed->winograd.reset();
    if (packed->algorithm != ConvAlgorithm::kGroupLanes) packed->group_lanes.clear();
    if (packed->winograd || !packed->group_lanes.empty()) packed->groups.clear();
  }
  return packed;
}

LUMEN_REGISTER_KERNEL("cpu", "conv2d", conv2d, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "fused_conv", fused_conv, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "conv2d", prepare_conv, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "fused_conv", prepare_conv, DType::Float32);

}  // namespace
}  // namespace lumen
