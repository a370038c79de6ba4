#include "backends/cpu/kernels/padded_image.h"

#include <algorithm>
#include <cstring>

#include "core/cpu_isa.h"

namespace lumen::cpu {
namespace {

// Stride 2 takes the grid for shallow convs (first layers: 3 input channels, 27 or 147 rows)
// where packing im2col panels cost as much as the products, even at up to 10% more lanes
// (2 threads, 224x224 input: 3->32 3x3 0.24 -> 0.12 ms, 3->64 7x7 1.01 -> 0.71 ms); deeper ones
// only where it costs no extra lanes (7x7 outputs: Inception-v2's 128->192 and 256->256 3x3
// convs 0.76-0.80x the im2col time; on 14x14 outputs, 208 -> 224 lanes, 1.0-1.19x).
constexpr int64_t kShallowDepth = 160;

// The columns of a padded row that come from the input row: dst[x] = in[step * x - lead] for
// x0 <= x < x1, zeros around them, where dst[x] = padded[first + step * x] and padded[i] =
// in[i - pl] inside the row. The same for every row of a column parity, so found once (its
// divisions cost more than copying a short row).
struct RowSpan {
  int64_t x0, x1, lead;
  RowSpan(int64_t w, int64_t pl, int64_t first, int64_t step, int64_t count) : lead(pl - first) {
    // x such that 0 <= first + step * x - pl < w.
    x0 = std::clamp<int64_t>(lead <= 0 ? 0 : (lead + step - 1) / step, 0, count);
    x1 = std::clamp<int64_t>((w + lead + step - 1) / step, x0, count);
  }
};

// Copies the input row `in` into the padded row dst (`count` floats) as `span` says.
template <int64_t kStep>
LUMEN_VEC_INLINE inline void padded_row(const float *in, const RowSpan &span, float *dst,
                                        int64_t count) {
  std::fill(dst, dst + span.x0, 0.0f);
  const float *src = in - span.lead;
  for (int64_t x = span.x0; x < span.x1; ++x) dst[x] = src[kStep * x];
  std::fill(dst + span.x1, dst + count, 0.0f);
}

}  // namespace

int64_t PaddedImage::grid_width_for(const ConvParams &p) {
  if (p.kh * p.kw == 1 || p.pt < 0 || p.pl < 0) return 0;
  if (p.sh == 1 && p.sw == 1) {
    const int64_t hp = p.oh + (p.kh - 1) * p.dh, wp = p.ow + (p.kw - 1) * p.dw;
    // The padded grid must hold the whole input (no negative padding on the far side).
    return hp < p.h + p.pt || wp < p.w + p.pl ? 0 : wp;
  }
  if (p.sh == 2 && p.sw == 2 && p.dh == 1 && p.dw == 1) return p.ow + (p.kw - 1) / 2;
  return 0;
}

bool PaddedImage::worthwhile(const ConvParams &p, const F32GemmMicrokernel &kernel) {
  const int64_t wp = grid_width_for(p);
  if (wp == 0) return false;
  // The grid's extra columns cost the lanes the micro-kernel computes for them (a 3x3 conv on a
  // 7x7 map fills two 32-column tiles either way), mg multiply-adds per lane and depth step;
  // packing im2col panels instead costs a gather per value of B, about 32 multiply-adds' worth,
  // more on rows narrower than a panel (one copy call per row segment). So the fewer output
  // channels per group, the more extra lanes the grid is worth: RegNet's 8 per group (76% of a
  // 26-group 3x3 conv on 14x14 was gathering, 3.5x the grid's time), DenseNet's 128->32 3x3 on 7x7
  // (0.59x the im2col time at 2 threads, in-process A/B) and 14x14 (0.55x). On squeezenet's 13x13
  // maps (48->192, 64->256: 208 grid lanes to 176) the two were within 4%.
  const auto lanes = [&](int64_t columns) {
    const int64_t rest = columns % kernel.nr;
    return columns - rest + ceil_div(rest, kernel.edge_cols) * kernel.edge_cols;
  };
  const int64_t grid_lanes = lanes((p.oh - 1) * wp + p.ow), plain_lanes = lanes(p.oh * p.ow);
  const int64_t gather_cost = 32 * 16 / std::clamp<int64_t>(p.ow, 1, 16);
  // Deep stride-2 convs with AVX2 (16-column panels) as stride 1: there the im2col panels' stride-2
  // gathers cost more than up to 10% more lanes (Zen 2, 2 threads, in-process A/B: 96->96 and
  // 64->64 3x3 s2 on 28x28 and 56x56 inputs 0.81x and 0.79x the time, 128->160 on 28x28 0.97x).
  if (p.sh == 2 && p.cg * p.kh * p.kw > kShallowDepth && kernel.nr > 16)
    return grid_lanes <= plain_lanes;
  return grid_lanes * p.mg <= plain_lanes * (p.mg + gather_cost);
}

PaddedImage::PaddedImage(ThreadPool &pool, const ConvParams &p, const float *x,
                         int64_t zero_channels)
    : stride2_(p.sh == 2), oh_(p.oh), ow_(p.ow), dh_(p.dh), dw_(p.dw) {
  const bool stride2 = stride2_;
  // Planes per channel, their rows, and the floats past the last plane that the last row's
  // discarded columns read.
  const int64_t parities = stride2 ? 4 : 1;
  const int64_t hp = stride2 ? p.oh + (p.kh - 1) / 2 : p.oh + (p.kh - 1) * p.dh;
  wp_ = stride2 ? p.ow + (p.kw - 1) / 2 : p.ow + (p.kw - 1) * p.dw;
  const int64_t slack = wp_ - p.ow;
  const int64_t plane = plane_ = checked_mul(hp, wp_);
  const int64_t planes = checked_mul(checked_add(p.cg, zero_channels), parities);
  padded_ = Tensor::empty(Shape{checked_add(checked_mul(planes, plane), slack)}, DType::Float32);
  float *dst = padded_.data<float>();
  // The zero channels and the slack after them.
  std::fill(dst + p.cg * parities * plane, dst + planes * plane + slack, 0.0f);
  // One item per output row of planes: (channel, row parity, row); each writes the row of both
  // column parities. Over the pool: done serially, the copy was a tenth of a small conv.
  const int64_t row_parities = stride2 ? 2 : 1;
  const int64_t items = checked_mul(checked_mul(p.cg, row_parities), hp);
  const int64_t step = stride2 ? 2 : 1;
  const RowSpan spans[2] = {RowSpan(p.w, p.pl, 0, step, wp_), RowSpan(p.w, p.pl, 1, step, wp_)};
  pool.parallel_for(items, std::max<int64_t>(1, 8192 / wp_), [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      // The item's (c, pa, y), counted up rather than divided out per row.
      int64_t y = begin % hp, pa = (begin / hp) % row_parities, c = begin / hp / row_parities;
      for (int64_t item = begin; item < end; ++item) {
        const int64_t r = stride2 ? 2 * y + pa : y;  // padded row
        const int64_t ir = r - p.pt;                 // input row
        const float *in = x + (c * p.h + ir) * p.w;
        for (int64_t pb = 0; pb < step; ++pb) {
          float *row = dst + (c * parities + 2 * pa + pb) * plane + y * wp_;
          if (ir < 0 || ir >= p.h)
            std::fill(row, row + wp_, 0.0f);
          else if (stride2)
            padded_row<2>(in, spans[pb], row, wp_);
          else
            padded_row<1>(in, spans[0], row, wp_);
        }
        if (++y == hp) {
          y = 0;
          if (++pa == row_parities) pa = 0, ++c;
        }
      }
    });
  });
  std::vector<int64_t> rows(static_cast<size_t>(checked_mul(checked_mul(p.cg, p.kh), p.kw)));
  KernelTap tap(p, 0);
  for (int64_t &row : rows) {
    row = tap_offset(tap.c, tap.a, tap.b);
    tap.next(p);
  }
  b_ = std::make_unique<RowTableB>(dst, std::move(rows));
}

int64_t PaddedImage::tap_offset(int64_t c, int64_t a, int64_t b) const {
  return stride2_ ? (c * 4 + 2 * (a % 2) + b % 2) * plane_ + (a / 2) * wp_ + b / 2
                  : c * plane_ + a * dh_ * wp_ + b * dw_;
}

}  // namespace lumen::cpu
