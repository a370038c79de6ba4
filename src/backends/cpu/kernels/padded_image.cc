#include "backends/cpu/kernels/padded_image.h"

#include <algorithm>
#include <cstring>

namespace lumen::cpu {

bool PaddedImage::worthwhile(const ConvParams &p, const F32GemmMicrokernel &kernel) {
  if (p.sh != 1 || p.sw != 1 || p.kh * p.kw == 1) return false;
  const int64_t hp = p.oh + (p.kh - 1) * p.dh, wp = p.ow + (p.kw - 1) * p.dw;
  // The padded grid must hold the whole input (no negative padding on the far side).
  if (hp < p.h + p.pt || wp < p.w + p.pl || p.pt < 0 || p.pl < 0) return false;
  if (kernel.run_in_place) {
    // Extra columns cost only their share of the micro-kernel's tiles: e.g. a 3x3 conv on a 7x7
    // map needs two 32-column tiles either way.
    const int64_t grid_tiles = ceil_div(p.oh * wp, kernel.nr);
    const int64_t plane_tiles = ceil_div(p.oh * p.ow, kernel.nr);
    return 4 * grid_tiles <= 5 * plane_tiles;
  }
  // Packing: at most ~10% extra columns, a 3x3 conv on maps at least 20 wide.
  return 10 * (wp - p.ow) <= p.ow;
}

PaddedImage::PaddedImage(ThreadPool &pool, const ConvParams &p, const float *x)
    : oh_(p.oh), wp_(p.ow + (p.kw - 1) * p.dw) {
  const int64_t hp = p.oh + (p.kh - 1) * p.dh;
  const int64_t plane = checked_mul(hp, wp_);
  const int64_t slack = (p.kw - 1) * p.dw;
  padded_ = Tensor::empty(Shape{checked_add(checked_mul(p.cg, plane), slack)}, DType::Float32);
  float *dst = padded_.data<float>();
  std::fill(dst + p.cg * plane, dst + p.cg * plane + slack, 0.0f);
  // Over the pool: done serially, the copy was a tenth of a small conv at 2 threads.
  pool.parallel_for(p.cg, std::max<int64_t>(1, 8192 / plane), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      float *out = dst + c * plane;
      const float *in = x + c * p.h * p.w;
      std::fill(out, out + p.pt * wp_, 0.0f);
      for (int64_t i = 0; i < p.h; ++i) {
        float *row = out + (p.pt + i) * wp_;
        std::fill(row, row + p.pl, 0.0f);
        std::memcpy(row + p.pl, in + i * p.w, static_cast<size_t>(p.w) * sizeof(float));
        std::fill(row + p.pl + p.w, row + wp_, 0.0f);
      }
      std::fill(out + (p.pt + p.h) * wp_, out + plane, 0.0f);
    }
  });
  std::vector<int64_t> rows(static_cast<size_t>(checked_mul(checked_mul(p.cg, p.kh), p.kw)));
  KernelTap tap(p, 0);
  for (int64_t &row : rows) {
    row = tap.c * plane + tap.a * p.dh * wp_ + tap.b * p.dw;
    tap.next(p);
  }
  b_ = std::make_unique<RowTableB>(dst, std::move(rows));
}

}  // namespace lumen::cpu
