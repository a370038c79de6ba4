// CPU conv_nd (float32): convolution with any number of spatial dims (1-D audio, 3-D video),
// groups, strides, pads and dilations, on the packed GEMM with the weights packed once at compile
// time.
//
// With 3 or more spatial dims, where the last two take the 2-D conv's padded grid (stride 1 or 2,
// see padded_image.h), the conv is a 2-D conv per output frame (a position of the outer dims):
// every input plane (channel, frame) is padded once, and output frame f is one GEMM whose B rows
// are the planes of the frames f reads (channel, outer tap) at each 2-D tap, or a zero plane where
// an outer tap falls in the padding. The weights' [M, C/group * taps] layout is already that
// GEMM's A. Nothing is gathered element by element (R3D-18's 3x3x3 convs spent a quarter of their
// time building im2col columns and another tenth packing them).
//
// Otherwise, per image, group and tile of output positions, the column matrix
// [C/group * prod(kernel), tile] is gathered (zeros where a tap falls in the padding; rows shared
// out over the pool; innermost-dim runs copied with their valid range computed once), then
// W_g [M/group, C/group * prod(kernel)] times it gives the output columns.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/kernels/padded_image.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Columns per GEMM: the column matrix of a 3-D conv is taps times larger than its input (R3D-18:
// 347 MB per image), so output positions are taken a tile at a time (~8 MiB of columns).
constexpr int64_t kColumnBytes = int64_t{8} << 20;

struct ConvGeometry {
  size_t k;  // spatial dims
  std::vector<int64_t> in, out, kernel, strides, pads, dilations;
  int64_t in_size = 1, out_size = 1, taps = 1;
};

// Column rows [row_begin, row_end) for output positions [o0, o0 + len): row r is input channel
// r / taps at tap r % taps. Output positions are walked a run of the innermost dim at a time: the
// input index is then i = o * stride - pad + tap * dilation, valid on one range of o (zeros
// outside), a plain copy for stride 1.
void gather_columns(const ConvGeometry &g, const float *xg, int64_t row_begin, int64_t row_end,
                    int64_t o0, int64_t len, float *col) {
  const size_t k = g.k, last = k - 1;
  std::vector<int64_t> tap(k), pos(k);
  const int64_t w_out = g.out[last], w_in = g.in[last], s = g.strides[last];
  for (int64_t row = row_begin; row < row_end; ++row) {
    for (int64_t rem = row % g.taps, d = int64_t(k); d-- > 0;) {
      tap[size_t(d)] = rem % g.kernel[size_t(d)];
      rem /= g.kernel[size_t(d)];
    }
    const float *plane = xg + (row / g.taps) * g.in_size;
    float *dst = col + (row - row_begin) * len;
    // Valid output columns of the innermost dim for this tap: 0 <= o * s + shift < w_in.
    const int64_t shift = tap[last] * g.dilations[last] - g.pads[last];
    const int64_t lo = std::clamp<int64_t>(shift >= 0 ? 0 : (-shift + s - 1) / s, 0, w_out);
    const int64_t hi =
        std::clamp<int64_t>(w_in - shift > 0 ? (w_in - shift + s - 1) / s : 0, lo, w_out);
    int64_t o = o0;
    for (size_t d = k; d-- > 0;) {  // the multi-index of output position o0
      pos[d] = o % g.out[d];
      o /= g.out[d];
    }
    for (int64_t done = 0; done < len;) {
      // Offset of the run's row in the input and whether the outer dims fall inside it.
      int64_t base = 0;
      bool inside = true;
      for (size_t d = 0; d < last; ++d) {
        const int64_t i = pos[d] * g.strides[d] - g.pads[d] + tap[d] * g.dilations[d];
        inside = inside && i >= 0 && i < g.in[d];
        base = base * g.in[d] + i;
      }
      const int64_t j0 = pos[last], run = std::min(w_out - j0, len - done);
      float *out = dst + done;
      if (!inside) {
        std::fill(out, out + run, 0.f);
      } else {
        const float *src = plane + base * w_in;  // src[j * s + shift] for valid j
        for (int64_t j = j0; j < j0 + run; ++j)
          out[j - j0] = j >= lo && j < hi ? src[j * s + shift] : 0.f;
      }
      done += run;
      if (j0 + run < w_out) break;  // the tile ends inside this run
      pos[last] = 0;
      for (size_t d = last; d-- > 0;) {  // the next run: carry into the outer dims
        if (++pos[d] < g.out[d]) break;
        pos[d] = 0;
      }
    }
  }
}

// The weights of every group as packed GEMM A operands [M/group, C/group * taps].
struct PackedNdWeights {
  std::vector<cpu::PackedA> groups;
};

std::shared_ptr<const void> prepare_conv_nd(const PrepareContext &ctx) {
  const Tensor *w = ctx.constant(1);
  if (!w || w->dtype() != DType::Float32 || w->rank() < 3) return nullptr;
  const int64_t group = ctx.attrs.get_int("group", 1), m = w->shape()[0];
  if (group < 1 || m % group != 0 || m == 0) return nullptr;
  const int64_t mg = m / group, k = w->numel() / m;
  auto packed = std::make_shared<PackedNdWeights>();
  const auto &kernel = cpu::default_f32_gemm_microkernel();
  for (int64_t g = 0; g < group; ++g)
    packed->groups.emplace_back(cpu::StridedA(w->data<float>() + g * mg * k, k, false), mg, k,
                                kernel);
  return packed;
}

// The 2-D conv over the last two dims (one frame of the outer ones), with `channels` input planes.
ConvParams inner_conv(const ConvGeometry &g, int64_t channels, int64_t mg) {
  const size_t h = g.k - 2, w = g.k - 1;
  ConvParams p{};
  p.n = 1, p.c = channels, p.h = g.in[h], p.w = g.in[w];
  p.m = mg, p.cg = channels, p.kh = g.kernel[h], p.kw = g.kernel[w];
  p.oh = g.out[h], p.ow = g.out[w];
  p.group = 1, p.mg = mg;
  p.sh = g.strides[h], p.sw = g.strides[w], p.pt = g.pads[h], p.pl = g.pads[w];
  p.dh = g.dilations[h], p.dw = g.dilations[w];
  return p;
}

// Output frame by output frame on the padded grid of the last two dims (see the top of the file).
// Returns false, doing nothing, where the grid does not apply.
bool conv_by_frames(KernelContext &ctx, const ConvGeometry &g, int64_t n, int64_t group, int64_t cg,
                    int64_t mg, const cpu::GemmA *const *a, const float *x, const float *bias,
                    float *y) {
  if (g.k < 3) return false;
  const size_t outer = g.k - 2;
  int64_t frames_in = 1, frames_out = 1, outer_taps = 1;
  for (size_t d = 0; d < outer; ++d)
    frames_in *= g.in[d], frames_out *= g.out[d], outer_taps *= g.kernel[d];
  const auto &kernel = cpu::default_f32_gemm_microkernel();
  // The GEMM's depth per output frame is cg * outer_taps planes' worth of 2-D taps.
  if (!cpu::PaddedImage::worthwhile(inner_conv(g, cg * outer_taps, mg), kernel)) return false;
  const ConvParams planes = inner_conv(g, cg * frames_in, mg);
  const int64_t plane_out = planes.oh * planes.ow, taps2d = planes.kh * planes.kw;
  const int64_t depth = cg * outer_taps * taps2d;
  const int64_t zero_channel = cg * frames_in;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < group; ++gi) {
      const float *xg = x + (b * group + gi) * cg * g.in_size;
      float *yg = y + (b * group + gi) * mg * g.out_size;
      const float *bg = bias ? bias + gi * mg : nullptr;
      const cpu::PaddedImage image(ctx.pool, planes, xg, 1);
      const int64_t wp = image.grid_width();
      // B's rows for output frame f.
      auto rows_for = [&](int64_t f) {
        std::vector<int64_t> pos(outer), rows;
        rows.reserve(static_cast<size_t>(depth));
        for (size_t d = outer; d-- > 0; f /= g.out[d]) pos[d] = f % g.out[d];
        std::vector<int64_t> tap(outer);
        // In the weights' order: channel, then outer tap, then the 2-D taps.
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t t = 0; t < outer_taps; ++t) {
            int64_t rem = t, frame = 0;
            bool inside = true;
            for (size_t d = outer; d-- > 0; rem /= g.kernel[d]) tap[d] = rem % g.kernel[d];
            for (size_t d = 0; d < outer; ++d) {
              const int64_t i = pos[d] * g.strides[d] - g.pads[d] + tap[d] * g.dilations[d];
              inside = inside && i >= 0 && i < g.in[d];
              frame = frame * g.in[d] + i;
            }
            const int64_t channel = inside ? c * frames_in + frame : zero_channel;
            for (int64_t ka = 0; ka < planes.kh; ++ka)
              for (int64_t kb = 0; kb < planes.kw; ++kb)
                rows.push_back(image.tap_offset(channel, ka, kb));
          }
        return rows;
      };
      const ukernels::GridColumns grid{wp, planes.ow, 0};
      const ukernels::TileEpilogue epilogue{bg, nullptr, -INFINITY, INFINITY, nullptr};
      auto run_frame = [&](int64_t f, int64_t max_threads) {
        const cpu::RowTableB rows(image.data(), rows_for(f));
        cpu::sgemm(ctx.pool, mg, image.columns(), depth, *a[gi], rows, yg + f * plane_out,
                   g.out_size,
                   {.max_threads = max_threads,
                    .kernel = &kernel,
                    .epilogue = bg ? &epilogue : nullptr,
                    .grid = &grid});
      };
      const int64_t threads_per_frame = cpu::gemm_threads(ctx.pool, mg, image.columns(), depth);
      if (frames_out > 1 && threads_per_frame < ctx.pool.size()) {
        ctx.pool.parallel_for(frames_out, 1, [&](int64_t begin, int64_t end) {
          for (int64_t f = begin; f < end; ++f) run_frame(f, 1);
        });
      } else {
        for (int64_t f = 0; f < frames_out; ++f) run_frame(f, 0);
      }
    }
  return true;
}

void conv_nd(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  Tensor &ty = ctx.output(0);
  ConvGeometry g;
  g.k = tx.rank() - 2;
  const size_t k = g.k;
  g.in.assign(tx.shape().begin() + 2, tx.shape().end());
  g.out.assign(ty.shape().begin() + 2, ty.shape().end());
  g.kernel.assign(tw.shape().begin() + 2, tw.shape().end());
  g.strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(k, 1));
  g.pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * k, 0));
  g.dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(k, 1));
  const int64_t n = tx.shape()[0], c = tx.shape()[1], m = tw.shape()[0];
  const int64_t group = ctx.attrs.get_int("group", 1);
  if (k == 0 || group < 1 || c % group != 0 || m % group != 0 || tw.shape()[1] != c / group ||
      g.strides.size() != k || g.pads.size() != 2 * k || g.dilations.size() != k)
    ctx.fail("input ", tx.shape().to_string(), ", weight ", tw.shape().to_string(), " and group ",
             group, " do not fit");
  const int64_t cg = c / group, mg = m / group;
  for (size_t d = 0; d < k; ++d)
    g.in_size *= g.in[d], g.out_size *= g.out[d], g.taps *= g.kernel[d];
  const int64_t depth = checked_mul(cg, g.taps, "conv_nd GEMM depth");
  if (ty.numel() == 0) return;
  const float *x = tx.data<float>(), *w = tw.data<float>();
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float *y = ty.data<float>();
  // The weights of each group: packed at compile time, or packed by the GEMM as it goes.
  const auto *packed = static_cast<const PackedNdWeights *>(ctx.prepared);
  std::vector<cpu::StridedA> plain;
  std::vector<const cpu::GemmA *> a;
  for (int64_t gi = 0; gi < group; ++gi)
    if (!packed) plain.emplace_back(w + gi * mg * depth, depth, false);
  for (int64_t gi = 0; gi < group; ++gi)
    a.push_back(packed ? static_cast<const cpu::GemmA *>(&packed->groups[size_t(gi)])
                       : &plain[size_t(gi)]);
  if (conv_by_frames(ctx, g, n, group, cg, mg, a.data(), x, bias, y)) return;

  const int64_t tile = std::clamp<int64_t>(
      kColumnBytes / std::max<int64_t>(1, depth * int64_t(sizeof(float))), 64, g.out_size);
  std::vector<float> col(static_cast<size_t>(checked_mul(depth, tile, "conv_nd columns")));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < group; ++gi) {
      const float *xg = x + (b * c + gi * cg) * g.in_size;
      float *yg = y + (b * m + gi * mg) * g.out_size;
      for (int64_t o0 = 0; o0 < g.out_size; o0 += tile) {
        const int64_t len = std::min(tile, g.out_size - o0);
        ctx.pool.parallel_for(
            depth, std::max<int64_t>(1, (1 << 14) / len), [&](int64_t begin, int64_t end) {
              gather_columns(g, xg, begin, end, o0, len, col.data() + begin * len);
            });
        cpu::sgemm(ctx.pool, mg, len, depth, *a[size_t(gi)], cpu::StridedB(col.data(), len, false),
                   yg + o0, g.out_size);
      }
      if (bias)
        for (int64_t r = 0; r < mg; ++r) {
          const float v = bias[gi * mg + r];
          for (int64_t o = 0; o < g.out_size; ++o) yg[r * g.out_size + o] += v;
        }
    }
}

LUMEN_REGISTER_KERNEL("cpu", "conv_nd", conv_nd, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "conv_nd", prepare_conv_nd, DType::Float32);

}  // namespace
}  // namespace lumen
