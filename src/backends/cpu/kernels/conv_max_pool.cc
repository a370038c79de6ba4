// CPU fused_conv_max_pool (float32; graph/ops/conv_max_pool.h): a shallow conv (a
// network's first layer) and the max pool after it, in channels-last layout, so the conv's output
// t never leaves L2 and the pool combines whole channel vectors (no strided loads).
//
// Unfused, SqueezeNet's first conv writes 3.2 MB that its pool reads straight back from memory,
// plane by plane. Here each thread takes strips of output rows; per band of a strip, the conv
// computes the t rows the pool needs that the previous band did not (a GEMM with t's pixels as
// rows and its channels as columns, its A panels copied from phase planes of the input), the pool
// combines them per output pixel over all channels, and the band's outputs are transposed into
// y's planes. The t rows shared with the next band are kept (moved to the front of the buffer), so
// only each strip's first band recomputes any.
//
// The conv's activation must be none, relu or clip (a clamp in the GEMM's store); pads must be
// smaller than the windows, so every band reads input rows (the pass checks both).
//
// The graph pass cannot see which algorithm the conv alone would get: an RGB first layer with
// channels in vector lanes (grouped_conv.cc) can beat the fused GEMM (SqueezeNet's 3->64: 0.76 ms
// vs 1.59 ms). So where the input's shape is known, the prepare function times both ways
// (kernel_choice.h) and may keep the stages apart: the conv's own kernel into a per-thread
// scratch t, then the max pool.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernel_choice.h"
#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/ukernels/f32_pack.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"
#include "graph/ops/conv_max_pool.h"

namespace lumen {
namespace {

// The conv's weights as the GEMM's B: W^T, [C * kh * kw, M], packed once; and whether the stages
// run apart for inputs of the measured shape, with the conv stage's own prepared state.
struct PreparedConvMaxPool {
  cpu::PackedB weights;
  std::shared_ptr<const void> conv;  // fused_conv's prepare result for the conv stage
  bool apart = false;
  Shape apart_for;  // the input shape `apart` was measured for
};

cpu::PackedB pack_weights(const Tensor &w) {
  const int64_t m = w.shape()[0], k = w.numel() / std::max<int64_t>(m, 1);
  return cpu::PackedB(cpu::StridedB(w.data<float>(), k, true), k, m,
                      cpu::default_f32_gemm_microkernel());
}

// One spatial axis of a stage: output o reads input o * stride - pad + i * dilation, i < kernel.
struct Axis {
  int64_t kernel, stride, pad, dilation;
  int64_t extent() const { return dilation * (kernel - 1) + 1; }
  // The inputs [lo, hi) that outputs [o0, o1) read, clipped to [0, size).
  std::pair<int64_t, int64_t> reads(int64_t o0, int64_t o1, int64_t size) const {
    const int64_t lo = std::clamp<int64_t>(o0 * stride - pad, 0, size);
    return {lo, std::clamp<int64_t>((o1 - 1) * stride - pad + extent(), lo, size)};
  }
  // Taps [lo, hi) of output o that land inside [0, size).
  std::pair<int64_t, int64_t> taps(int64_t o, int64_t size) const {
    int64_t lo, hi;
    valid_range(o * stride - pad, dilation, size, kernel, lo, hi);
    return {lo, hi};
  }
};

Axis axis(const Attributes &attrs, size_t i, int64_t kernel) {
  return {kernel, attrs.get_ints("strides", {1, 1}).at(i),
          attrs.get_ints("pads", {0, 0, 0, 0}).at(i), attrs.get_ints("dilations", {1, 1}).at(i)};
}

// One image's input, zero-padded and split by row and column phase modulo the stride, so that
// tap (a, b) of consecutive outputs along a row reads consecutive floats: phase plane (c, py, px)
// holds padded[i * s + py][j * s + px] at [i][j]; tap (a, b) of output (oy, ox) is in plane
// (c, a*dh % sh, b*dw % sw) at [oy + a*dh / sh][ox + b*dw / sw].
class PhasePlanes {
 public:
  PhasePlanes(ThreadPool &pool, const ConvParams &p, const float *x, float *data)
      : rows_(p.oh + (p.kh - 1) * p.dh / p.sh),
        cols_(p.ow + (p.kw - 1) * p.dw / p.sw),
        data_(data) {
    // Each tap's offset from its output's position, once: divisions per tap cost more than the
    // copies.
    for (KernelTap tap(p, 0); tap.c < p.c; tap.next(p)) {
      const int64_t ra = tap.a * p.dh, cb = tap.b * p.dw;
      const int64_t q = (tap.c * p.sh + ra % p.sh) * p.sw + cb % p.sw;
      tap_offsets_.push_back((q * rows_ + ra / p.sh) * cols_ + cb / p.sw);
    }
    pool.parallel_for(p.c * p.sh * p.sw, 1, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t c = q / (p.sh * p.sw), py = q / p.sw % p.sh, px = q % p.sw;
        float *plane = data_ + q * rows_ * cols_;
        for (int64_t i = 0; i < rows_; ++i) {
          const int64_t iy = i * p.sh + py - p.pt;
          float *dst = plane + i * cols_;
          if (iy < 0 || iy >= p.h) {
            std::fill(dst, dst + cols_, 0.0f);
            continue;
          }
          // Columns j with input column j * sw + px - pl inside the input.
          int64_t j0, j1;
          valid_range(px - p.pl, p.sw, p.w, cols_, j0, j1);
          const float *src = x + (c * p.h + iy) * p.w + px - p.pl;
          std::fill(dst, dst + j0, 0.0f);
          // Compiled for the widest ISA: stride 2 becomes shuffles instead of scalar loads.
          const int64_t sw = p.sw;
          vec::run_best([&]() LUMEN_VEC_INLINE {
            if (sw == 2)
              for (int64_t j = j0; j < j1; ++j) dst[j] = src[2 * j];
            else
              for (int64_t j = j0; j < j1; ++j) dst[j] = src[j * sw];
          });
          std::fill(dst + j1, dst + cols_, 0.0f);
        }
      }
    });
  }
  static int64_t floats(const ConvParams &p) {
    return p.c * p.sh * p.sw * (p.oh + (p.kh - 1) * p.dh / p.sh) *
           (p.ow + (p.kw - 1) * p.dw / p.sw);
  }
  // Where tap k (of C * kh * kw) of output (oy, ox) is; the next outputs along the row follow.
  const float *at(int64_t k, int64_t oy, int64_t ox) const {
    return data_ + tap_offsets_[static_cast<size_t>(k)] + oy * cols_ + ox;
  }

 private:
  int64_t rows_, cols_;
  float *data_;
  std::vector<int64_t> tap_offsets_;
};

// The conv's im2col matrix transposed, as the GEMM's A: row i is t's pixel first_row * tw + i,
// depth p its tap (c, a, b); each panel step is a contiguous run of the phase planes per output
// row the panel's pixels are on.
class PatchRows final : public cpu::GemmA {
 public:
  PatchRows(const ConvParams &p, const PhasePlanes &planes, int64_t first_row)
      : p_(p), planes_(planes), first_row_(first_row) {}

  cpu::PanelBlock panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                         float *buffer) const override {
    constexpr int kMaxRows = 16;  // every micro-kernel's mr
    for (int64_t i = 0; i * mr < mc; ++i) {
      const int64_t pixel = m0 + i * mr;
      const int rows = static_cast<int>(std::min<int64_t>({mr, kMaxRows, m0 + mc - pixel}));
      const int64_t oy = first_row_ + pixel / p_.ow, ox = pixel % p_.ow;
      float *dst = buffer + i * kc * mr;
      if (ox + rows <= p_.ow) {  // one output row (most panels): one run per step
        for (int64_t s = k0; s < k0 + kc; ++s, dst += mr) {
          const float *run = planes_.at(s, oy, ox);
          if (rows == 6 && mr == 6) {
            std::memcpy(dst, run, 6 * sizeof(float));
            continue;
          }
          std::copy(run, run + rows, dst);
          std::fill(dst + rows, dst + mr, 0.0f);
        }
        continue;
      }
      // Pixels on several output rows (the end of a row, or maps narrower than the panel).
      int64_t offset[kMaxRows];
      for (int r = 0; r < rows; ++r) {
        const int64_t px = ox + r;
        offset[r] = planes_.at(0, oy + px / p_.ow, px % p_.ow) - planes_.at(0, 0, 0);
      }
      for (int64_t s = k0; s < k0 + kc; ++s, dst += mr) {
        const float *base = planes_.at(s, 0, 0);
        for (int r = 0; r < rows; ++r) dst[r] = base[offset[r]];
        std::fill(dst + rows, dst + mr, 0.0f);
      }
    }
    return {buffer, kc * mr};
  }

 private:
  ConvParams p_;
  const PhasePlanes &planes_;
  int64_t first_row_;
};

// A grow-only, cache-line aligned float buffer.
class Scratch {
 public:
  float *get(int64_t count) {
    if (count > size_) {
      data_.reset(static_cast<float *>(
          ::operator new[](static_cast<size_t>(count) * sizeof(float), std::align_val_t{64})));
      size_ = count;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float *p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<float[], Free> data_;
  int64_t size_ = 0;
};

// About this much of t per band (L2 is 512 KiB on the machines this was measured on).
constexpr int64_t kBandBytes = 192 * 1024;

// Eight channels of the pool at a time, their maxima in a register over the window's taps (GCC
// vector extensions: SSE pairs in the baseline build, one AVX2 or half an AVX-512 register in the
// run_best ones).
using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = int32_t __attribute__((vector_size(32)));
constexpr int64_t kPoolBlock = 8;

// The max over kernel rows [a0, a1) x columns [b0, b1) of output (oy, ox), all channels, into
// out[0, channels): t holds rows [t0, ...) of the conv's output, channels last. NaN wins, and a
// window with no input is -inf (the reference's semantics).
LUMEN_VEC_INLINE inline void pool_pixel(const Axis &rows, const Axis &cols, const float *t,
                                        int64_t t0, int64_t tw, int64_t channels, int64_t oy,
                                        int64_t ox, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                                        float *out) {
  const float *first =
      t + ((oy * rows.stride - rows.pad - t0) * tw + ox * cols.stride - cols.pad) * channels;
  const int64_t row_step = rows.dilation * tw * channels, col_step = cols.dilation * channels;
  const auto combine = [](float acc, float v)
                           LUMEN_VEC_INLINE { return v != v ? v : (v > acc ? v : acc); };
  int64_t m0 = 0;
  for (; m0 + kPoolBlock <= channels; m0 += kPoolBlock) {
    f32x8 acc = f32x8{} - std::numeric_limits<float>::infinity();
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = b0; b < b1; ++b) {
        f32x8 v;
        std::memcpy(&v, first + a * row_step + b * col_step + m0, sizeof(v));
        // NaN lanes of v win, then the larger value: v != v ? v : (v > acc ? v : acc).
        const i32x8 take = (v != v) | (v > acc);
        acc = take ? v : acc;
      }
    std::memcpy(out + m0, &acc, sizeof(acc));
  }
  for (int64_t m = m0; m < channels; ++m) {
    float acc = -std::numeric_limits<float>::infinity();
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = b0; b < b1; ++b) acc = combine(acc, first[a * row_step + b * col_step + m]);
    out[m] = acc;
  }
}

void fused_conv_max_pool(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  Tensor &y = ctx.output(0);
  const Attributes conv_attrs = conv_stage_attributes(ctx.attrs);
  const Attributes pool_attrs = pool_stage_attributes(ctx.attrs);
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) ctx.fail("expected 4-D input and weights");
  if (conv_attrs.get_int("group", 1) != 1) ctx.fail("the conv must have one group");
  const Shape t_shape = conv_stage_output_shape(x.shape(), w.shape(), conv_attrs);
  ConvParams p{};
  p.n = x.shape()[0], p.c = x.shape()[1], p.h = x.shape()[2], p.w = x.shape()[3];
  p.m = w.shape()[0], p.cg = w.shape()[1], p.kh = w.shape()[2], p.kw = w.shape()[3];
  p.oh = t_shape[2], p.ow = t_shape[3], p.group = 1, p.mg = p.m;
  const Axis conv_rows = axis(conv_attrs, 0, p.kh), conv_cols = axis(conv_attrs, 1, p.kw);
  p.sh = conv_rows.stride, p.sw = conv_cols.stride, p.pt = conv_rows.pad, p.pl = conv_cols.pad;
  p.dh = conv_rows.dilation, p.dw = conv_cols.dilation;
  if (p.cg != p.c)
    ctx.fail("weights ", w.shape().to_string(), " do not match input ", x.shape().to_string());
  const int64_t m = p.m, th = p.oh, tw = p.ow, k = checked_mul(checked_mul(p.c, p.kh), p.kw);
  const int64_t yh = y.shape()[2], yw = y.shape()[3];
  if (y.shape()[1] != m) ctx.fail("output ", y.shape().to_string(), " must have ", m, " channels");
  if (y.numel() == 0) return;
  const auto kernel = pool_attrs.get_ints("kernel_shape", {});
  if (kernel.size() != 2) ctx.fail("attribute pool_kernel_shape must have 2 values");
  const Axis pool_rows = axis(pool_attrs, 0, kernel[0]), pool_cols = axis(pool_attrs, 1, kernel[1]);

  // The conv's bias and activation in the GEMM's store.
  KernelContext conv_ctx{.attrs = conv_attrs, .pool = ctx.pool, .op = ctx.op, .node = ctx.node};
  float lo, hi;
  if (!Epilogue<float>(conv_ctx).as_clamp(lo, hi))
    ctx.fail("the conv's activation must be none, relu or clip");
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  const ukernels::TileEpilogue gemm_epilogue{nullptr, bias, lo, hi};
  const auto *prepared = static_cast<const PreparedConvMaxPool *>(ctx.prepared);
  std::unique_ptr<cpu::PackedB> packed_here;
  if (!prepared) packed_here = std::make_unique<cpu::PackedB>(pack_weights(w));
  const cpu::PackedB &weights = prepared ? prepared->weights : *packed_here;

  // Output rows per band: t's band within kBandBytes (or the band_rows attribute).
  const int64_t t_row_floats = checked_mul(tw, m);
  int64_t rows = ctx.attrs.get_int(std::string(kBandRowsAttr), 0);
  if (rows <= 0) {
    const int64_t t_rows =
        std::max<int64_t>(kBandBytes / int64_t(sizeof(float)) / t_row_floats, pool_rows.extent());
    rows = (t_rows - pool_rows.extent()) / pool_rows.stride + 1;
  }
  rows = std::clamp<int64_t>(rows, 1, yh);
  const int64_t most_t_rows = std::min(th, (rows - 1) * pool_rows.stride + pool_rows.extent());
  // Strips of bands, a few per thread: each thread keeps the t rows its bands share.
  const int64_t strips = std::min(yh, std::max<int64_t>(1, ceil_div(4 * ctx.pool.size(), p.n)));
  const int64_t x_image = checked_mul(checked_mul(p.c, p.h), p.w);
  const int64_t y_plane = checked_mul(yh, yw);
  const float *xd = x.data<float>();
  float *yd = y.data<float>();
  [[maybe_unused]] const bool avx2 = vec::cpu_isa() >= vec::Isa::Avx2;
  std::vector<std::pair<int64_t, int64_t>> col_taps(static_cast<size_t>(yw));
  for (int64_t ox = 0; ox < yw; ++ox) col_taps[ox] = pool_cols.taps(ox, tw);

  // Every image's phase planes first (a copy of the input), read by all the bands.
  thread_local Scratch plane_scratch;
  const int64_t plane_floats = PhasePlanes::floats(p);
  float *plane_data = plane_scratch.get(checked_mul(plane_floats, p.n));
  std::vector<PhasePlanes> planes;
  planes.reserve(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.n; ++i)
    planes.emplace_back(ctx.pool, p, xd + i * x_image, plane_data + i * plane_floats);
  ctx.pool.parallel_for(p.n * strips, 1, [&](int64_t begin, int64_t end) {
    thread_local Scratch t_scratch, out_scratch;
    float *tb = t_scratch.get(most_t_rows * t_row_floats);
    float *ob = out_scratch.get(rows * yw * m);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / strips, strip = item % strips;
      const int64_t s0 = yh * strip / strips, s1 = yh * (strip + 1) / strips;
      int64_t have0 = 0, have1 = 0;  // t rows [have0, have1) are in tb
      for (int64_t r0 = s0; r0 < s1; r0 += rows) {
        const int64_t r1 = std::min(s1, r0 + rows);
        // Not a structured binding: the lambda below captures t0 (clang before 16 refuses that).
        const std::pair<int64_t, int64_t> reads = pool_rows.reads(r0, r1, th);
        const int64_t t0 = reads.first, t1 = reads.second;
        if (t0 >= t1)
          ctx.fail("output rows [", r0, ", ", r1, ") read no rows of the conv's output");
        // Keep the rows of the last band that this one reads (they start it: t0 only grows);
        // make the rest.
        const int64_t keep1 = std::min(t1, have1);
        const bool keep = keep1 > t0 && t0 >= have0;
        if (keep && have0 != t0)
          std::memmove(tb, tb + (t0 - have0) * t_row_floats,
                       static_cast<size_t>((keep1 - t0) * t_row_floats) * sizeof(float));
        const int64_t make0 = keep ? keep1 : t0;
        have0 = t0, have1 = t1;
        if (make0 < t1) {
          const PatchRows patches(p, planes[image], make0);
          cpu::sgemm(ctx.pool, (t1 - make0) * tw, m, k, patches, weights,
                     tb + (make0 - t0) * t_row_floats, m,
                     {.max_threads = 1, .epilogue = &gemm_epilogue});
        }
        // The band's outputs, channels last, then into y's planes.
        vec::run_best([&]() LUMEN_VEC_INLINE {
          for (int64_t oy = r0; oy < r1; ++oy) {
            const auto [a0, a1] = pool_rows.taps(oy, th);
            for (int64_t ox = 0; ox < yw; ++ox)
              pool_pixel(pool_rows, pool_cols, tb, t0, tw, m, oy, ox, a0, a1, col_taps[ox].first,
                         col_taps[ox].second, ob + ((oy - r0) * yw + ox) * m);
          }
        });
        const int64_t pixels = (r1 - r0) * yw;
        float *y0 = yd + image * m * y_plane + r0 * yw;
#if defined(__x86_64__) && defined(__GNUC__)
        if (avx2) {
          ukernels::f32_transpose_to_planes__avx2(ob, pixels, m, y0, y_plane);
          continue;
        }
#endif
        for (int64_t c = 0; c < m; ++c)
          for (int64_t q = 0; q < pixels; ++q) y0[c * y_plane + q] = ob[q * m + c];
      }
    }
  });
}

// The stages apart: fused_conv (with its own algorithm choice) into a scratch t, then max_pool2d.
void conv_then_max_pool(KernelContext &ctx, const PreparedConvMaxPool &prepared) {
  const KernelRegistry &kernels = kernel_registry("cpu");
  static const KernelFn conv = kernels.find("fused_conv", DType::Float32);
  static const KernelFn pool = kernels.find("max_pool2d", DType::Float32);
  const Attributes conv_attrs = conv_stage_attributes(ctx.attrs);
  const Shape t_shape =
      conv_stage_output_shape(ctx.input(0).shape(), ctx.input(1).shape(), conv_attrs);
  thread_local Scratch t_scratch;
  Tensor t = Tensor::wrap(t_scratch.get(t_shape.numel()), DType::Float32, t_shape, {}, [] {});
  KernelContext conv_ctx{.inputs = ctx.inputs,
                         .outputs = {&t},
                         .attrs = conv_attrs,
                         .pool = ctx.pool,
                         .op = "fused_conv",
                         .node = ctx.node,
                         .prepared = prepared.conv.get()};
  conv(conv_ctx);
  KernelContext pool_ctx{.inputs = {&t},
                         .outputs = {&ctx.output(0)},
                         .attrs = pool_stage_attributes(ctx.attrs),
                         .pool = ctx.pool,
                         .op = "max_pool2d",
                         .node = ctx.node};
  pool(pool_ctx);
}

void conv_max_pool(KernelContext &ctx) {
  const auto *prepared = static_cast<const PreparedConvMaxPool *>(ctx.prepared);
  if (prepared && prepared->apart && ctx.input(0).shape() == prepared->apart_for)
    return conv_then_max_pool(ctx, *prepared);
  fused_conv_max_pool(ctx);
}

// Packs the weights for the fused kernel; where every input dim is known, also prepares the conv
// stage as a conv of its own and times the two ways on this machine.
std::shared_ptr<const void> prepare_conv_max_pool(const PrepareContext &ctx) {
  const Tensor *w = ctx.constant(1);
  if (!w || w->dtype() != DType::Float32 || w->rank() != 4) return nullptr;
  auto prepared = std::make_shared<PreparedConvMaxPool>(PreparedConvMaxPool{pack_weights(*w)});
  const Shape &xs = ctx.input_shapes.at(0);
  const bool known = xs.rank() == 4 && std::none_of(xs.dims().begin(), xs.dims().end(),
                                                    [](int64_t d) { return d == kUnknownDim; });
  if (!known || ctx.output_shapes.empty() || !ctx.pool || !cpu::calibration_enabled())
    return prepared;
  ctx.shape_specific = true;  // the choice is for this input shape
  const Attributes conv_attrs = conv_stage_attributes(ctx.attrs);
  if (PrepareFn prepare_conv = kernel_registry("cpu").find_prepare("fused_conv", DType::Float32)) {
    const PrepareContext conv_ctx{.constants = ctx.constants,
                                  .input_shapes = ctx.input_shapes,
                                  .attrs = conv_attrs,
                                  .op = "fused_conv",
                                  .node = ctx.node,
                                  .pool = ctx.pool};
    prepared->conv = prepare_conv(conv_ctx);
  }
  // Scratch operands of the real shapes (the real weights and bias).
  Tensor x = Tensor::zeros(xs);
  float *xd = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) xd[i] = float(int(i % 17) - 8) * 0.125f;
  Tensor y = Tensor::empty(ctx.output_shapes[0]);
  std::vector<const Tensor *> inputs = {&x, w};
  if (const Tensor *b = ctx.constant(2))
    inputs.push_back(b);
  else if (ctx.input_shapes.size() > 2 && ctx.input_shapes[2].rank() > 0)
    return prepared;
  KernelContext run{.inputs = inputs,
                    .outputs = {&y},
                    .attrs = ctx.attrs,
                    .pool = *ctx.pool,
                    .op = ctx.op,
                    .node = ctx.node,
                    .prepared = prepared.get()};
  const std::vector<cpu::AlgorithmCandidate> candidates = {
      {"conv_max_pool_fused", [&] { fused_conv_max_pool(run); }},
      {"conv_then_max_pool", [&] { conv_then_max_pool(run, *prepared); }}};
  const std::string key = "fused_conv_max_pool x=" + xs.to_string() +
                          " w=" + w->shape().to_string() + (inputs.size() > 2 ? " bias " : " ") +
                          ctx.attrs.to_string();
  prepared->apart = cpu::choose_algorithm(key, candidates, 0, ctx.pool->size(), ctx.algorithm) == 1;
  prepared->apart_for = xs;
  if (!prepared->apart) prepared->conv.reset();
  return prepared;
}

LUMEN_REGISTER_KERNEL("cpu", "fused_conv_max_pool", conv_max_pool, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "fused_conv_max_pool", prepare_conv_max_pool, DType::Float32);

}  // namespace
}  // namespace lumen
