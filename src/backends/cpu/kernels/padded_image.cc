#include "backends/cpu/kernels/padded_image.h"

#include <algorithm>
#include <cstring>

#include "core/cpu_isa.h"

namespace lumen::cpu {
namespace {

// Stride 2 reads B in place only where the depth is small, in first layers (3 input channels:
// 27 or 147 rows): there packing im2col panels cost as much as the products (2 threads, 224x224
// input: 3->32 3x3 0.24 -> 0.12 ms, 3->64 7x7 1.01 -> 0.71 ms). Deep stride-2 convs pack: each
// packed panel feeds many more products, and hundreds of rows a plane apart in place thrash L1.
constexpr int64_t kMaxStride2InPlaceDepth = 160;

// Copies the row of `in` (`w` floats) that lands on a padded row into dst (`count` floats), where
// dst[x] = padded[first + step * x] and padded[i] = in[i - pl] inside the row, 0 outside.
LUMEN_VEC_INLINE inline void padded_row(const float *in, int64_t w, int64_t pl, int64_t first,
                                        int64_t step, float *dst, int64_t count) {
  // x such that 0 <= first + step * x - pl < w.
  const int64_t lead = pl - first;  // in[step * x - lead]
  const int64_t x0 = std::clamp<int64_t>(lead <= 0 ? 0 : (lead + step - 1) / step, 0, count);
  const int64_t x1 = std::clamp<int64_t>((w + lead + step - 1) / step, x0, count);
  std::fill(dst, dst + x0, 0.0f);
  const float *src = in - lead;
  if (step == 1)
    for (int64_t x = x0; x < x1; ++x) dst[x] = src[x];
  else
    for (int64_t x = x0; x < x1; ++x) dst[x] = src[2 * x];
  std::fill(dst + x1, dst + count, 0.0f);
}

}  // namespace

bool PaddedImage::worthwhile(const ConvParams &p, const F32GemmMicrokernel &kernel) {
  if (p.kh * p.kw == 1 || p.pt < 0 || p.pl < 0) return false;
  int64_t wp = 0;
  if (p.sh == 1 && p.sw == 1) {
    const int64_t hp = p.oh + (p.kh - 1) * p.dh;
    wp = p.ow + (p.kw - 1) * p.dw;
    // The padded grid must hold the whole input (no negative padding on the far side).
    if (hp < p.h + p.pt || wp < p.w + p.pl) return false;
    // Packing: at most ~10% extra columns, a 3x3 conv on maps at least 20 wide.
    if (!kernel.run_in_place) return 10 * (wp - p.ow) <= p.ow;
  } else if (p.sh == 2 && p.sw == 2 && p.dh == 1 && p.dw == 1 && kernel.run_in_place &&
             p.cg * p.kh * p.kw <= kMaxStride2InPlaceDepth) {
    wp = p.ow + (p.kw - 1) / 2;
  } else {
    return false;
  }
  // In place, extra columns cost only the lanes the micro-kernel computes for them (a 3x3 conv on
  // a 7x7 map fills two 32-column tiles either way), against packing im2col panels: at most ~10%
  // more lanes. On 13x13 maps the grid's 195 columns take 208 lanes to the plane's 176, and the
  // packed im2col path ran 5-12% faster (1 thread, squeezenet's 48->192 and 64->256 3x3 convs);
  // on 14x14 (224 to 208) and 27x27 (784 to 736) the two were even or the grid ahead.
  const auto lanes = [&](int64_t columns) {
    const int64_t rest = columns % kernel.nr;
    return columns - rest + ceil_div(rest, kernel.edge_cols) * kernel.edge_cols;
  };
  return 10 * lanes(p.oh * wp) <= 11 * lanes(p.oh * p.ow);
}

PaddedImage::PaddedImage(ThreadPool &pool, const ConvParams &p, const float *x) : oh_(p.oh) {
  const bool stride2 = p.sh == 2;
  // Planes per channel, their rows, and the floats past the last plane that the last row's
  // discarded columns read.
  const int64_t parities = stride2 ? 4 : 1;
  const int64_t hp = stride2 ? p.oh + (p.kh - 1) / 2 : p.oh + (p.kh - 1) * p.dh;
  wp_ = stride2 ? p.ow + (p.kw - 1) / 2 : p.ow + (p.kw - 1) * p.dw;
  const int64_t slack = wp_ - p.ow;
  const int64_t plane = checked_mul(hp, wp_);
  const int64_t planes = checked_mul(p.cg, parities);
  padded_ = Tensor::empty(Shape{checked_add(checked_mul(planes, plane), slack)}, DType::Float32);
  float *dst = padded_.data<float>();
  std::fill(dst + planes * plane, dst + planes * plane + slack, 0.0f);
  // One item per output row of planes: (channel, row parity, row); each writes the row of both
  // column parities. Over the pool: done serially, the copy was a tenth of a small conv.
  const int64_t row_parities = stride2 ? 2 : 1;
  const int64_t items = checked_mul(checked_mul(p.cg, row_parities), hp);
  pool.parallel_for(items, std::max<int64_t>(1, 8192 / wp_), [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t y = item % hp, pa = (item / hp) % row_parities, c = item / hp / row_parities;
        const int64_t r = stride2 ? 2 * y + pa : y;  // padded row
        const int64_t ir = r - p.pt;                 // input row
        const float *in = x + (c * p.h + ir) * p.w;
        for (int64_t pb = 0; pb < (stride2 ? 2 : 1); ++pb) {
          float *row = dst + (c * parities + 2 * pa + pb) * plane + y * wp_;
          if (ir < 0 || ir >= p.h)
            std::fill(row, row + wp_, 0.0f);
          else
            padded_row(in, p.w, p.pl, pb, stride2 ? 2 : 1, row, wp_);
        }
      }
    });
  });
  std::vector<int64_t> rows(static_cast<size_t>(checked_mul(checked_mul(p.cg, p.kh), p.kw)));
  KernelTap tap(p, 0);
  for (int64_t &row : rows) {
    row = stride2
              ? (tap.c * 4 + 2 * (tap.a % 2) + tap.b % 2) * plane + (tap.a / 2) * wp_ + tap.b / 2
              : tap.c * plane + tap.a * p.dh * wp_ + tap.b * p.dw;
    tap.next(p);
  }
  b_ = std::make_unique<RowTableB>(dst, std::move(rows));
}

}  // namespace lumen::cpu
