// CPU conv2d and fused_conv. General case: im2col + one GEMM per (image, group), on BLAS. A 1x1 /
// stride-1 / unpadded conv is a GEMM on the input as it lies. Convs with one input channel per
// group (depthwise) run in depthwise_conv.cc.
//
// Threading: with at least as many (image, group) items as threads and a small im2col buffer,
// each thread takes whole items (single-threaded BLAS inside); otherwise the items run one after
// another with im2col rows and the GEMM split over the pool.
//
// fused_conv adds a residual and an activation (backends/common/epilogue.h) to each output block
// right after it is computed: per output plane for depthwise convs, per block of output columns
// (all of the group's channels) after its GEMM otherwise, so the epilogue reads a block still in
// cache instead of making a second pass over the tensor.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/cpu/blas.h"
#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/kernels/depthwise_conv.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Rows [row_begin, row_end) of the im2col matrix [cg * kh * kw, oh * ow] for one image and group;
// `x` points at the group's first input channel.
template <class T>
void im2col_rows(const ConvParams &p, const T *x, T *col, int64_t row_begin, int64_t row_end) {
  const int64_t plane = p.oh * p.ow;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t c = r / (p.kh * p.kw), a = (r / p.kw) % p.kh, b = r % p.kw;
    const T *xc = x + c * p.h * p.w;
    T *dst = col + r * plane;
    const int64_t col_offset = b * p.dw - p.pl;
    int64_t lo, hi;
    valid_range(col_offset, p.sw, p.w, p.ow, lo, hi);
    for (int64_t i = 0; i < p.oh; ++i, dst += p.ow) {
      const int64_t ih = i * p.sh - p.pt + a * p.dh;
      if (ih < 0 || ih >= p.h) {
        std::fill(dst, dst + p.ow, T(0));
        continue;
      }
      // First valid input element of this row; later ones are p.sw apart.
      const T *src = xc + ih * p.w + lo * p.sw + col_offset;
      std::fill(dst, dst + lo, T(0));
      if (p.sw == 1)
        std::memcpy(dst + lo, src, static_cast<size_t>(hi - lo) * sizeof(T));
      else
        for (int64_t j = lo; j < hi; ++j) dst[j] = src[(j - lo) * p.sw];
      std::fill(dst + hi, dst + p.ow, T(0));
    }
  }
}

// conv2d when `residual` is nullptr and `epilogue` has no activation; fused_conv otherwise.
template <class T>
void conv2d_with_epilogue(KernelContext &ctx, const T *residual, const Epilogue<T> &epilogue) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  const Tensor &ty = ctx.output(0);
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  ConvParams p{};
  p.n = tx.shape()[0], p.c = tx.shape()[1], p.h = tx.shape()[2], p.w = tx.shape()[3];
  p.m = tw.shape()[0], p.cg = tw.shape()[1], p.kh = tw.shape()[2], p.kw = tw.shape()[3];
  p.oh = ty.shape()[2], p.ow = ty.shape()[3];
  p.group = ctx.attrs.get_int("group", 1);
  p.sh = strides.at(0), p.sw = strides.at(1), p.pt = pads.at(0), p.pl = pads.at(1);
  p.dh = dilations.at(0), p.dw = dilations.at(1);
  if (p.group < 1 || p.c != p.cg * p.group || p.m % p.group != 0)
    ctx.fail("channels do not match: input ", tx.shape().to_string(), ", weight ",
             tw.shape().to_string(), ", group ", p.group);
  p.mg = p.m / p.group;
  if (ty.numel() == 0) return;

  const T *x = tx.data<T>();
  const T *w = tw.data<T>();
  const T *bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  T *y = ty.data<T>();
  const bool has_epilogue = residual || epilogue.has_activation();
  const int64_t in_plane = checked_mul(p.h, p.w), out_plane = checked_mul(p.oh, p.ow);
  const int64_t k = checked_mul(checked_mul(p.cg, p.kh), p.kw, "conv2d GEMM depth");

  if (p.cg == 1) {
    depthwise_conv2d(ctx.pool, p, x, w, bias, residual, epilogue, y);
    return;
  }

  const bool pointwise = p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.pt == 0 &&
                         p.pl == 0 && p.oh == p.h && p.ow == p.w;
  const int64_t col_elems = pointwise ? 0 : checked_mul(k, out_plane, "conv2d im2col size");
  const int64_t items = checked_mul(p.n, p.group);

  // Y[item] = W[group] @ col + bias: the bias is written first and the GEMM accumulates onto it.
  auto run_item = [&](int64_t item, T *col, bool threaded) {
    const int64_t n = item / p.group, g = item % p.group;
    const T *xg = x + (n * p.c + g * p.cg) * in_plane;
    T *yg = y + (n * p.m + g * p.mg) * out_plane;
    const T *bg = bias ? bias + g * p.mg : nullptr;
    if (bg && !has_epilogue)
      for (int64_t m = 0; m < p.mg; ++m)
        std::fill(yg + m * out_plane, yg + (m + 1) * out_plane, bg[m]);
    const T *b = xg;
    if (!pointwise) {
      if (threaded) {
        const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_plane));
        ctx.pool.parallel_for(
            k, grain, [&](int64_t begin, int64_t end) { im2col_rows(p, xg, col, begin, end); });
      } else {
        im2col_rows(p, xg, col, 0, k);
      }
      b = col;
    }
    const T *wg = w + g * p.mg * k;
    const T beta = bias ? T(1) : T(0);
    if (has_epilogue) {
      // Blocks of output columns across the group's mg channels: bias, GEMM and epilogue one
      // block at a time, so each block is written, accumulated and finished while in cache.
      const T *zg = residual ? residual + (yg - y) : nullptr;
      const int64_t block = std::max<int64_t>(
          64, kEpilogueBlockBytes / static_cast<int64_t>(sizeof(T) * static_cast<size_t>(p.mg)));
      const int64_t parts = threaded ? gemm_parts(ctx.pool, p.mg, out_plane, k) : 1;
      for_each_output_block(&ctx.pool, out_plane, block, parts, [&](int64_t j0, int64_t j1) {
        if (bg)
          for (int64_t m = 0; m < p.mg; ++m)
            std::fill(yg + m * out_plane + j0, yg + m * out_plane + j1, bg[m]);
        blas::gemm(false, false, p.mg, j1 - j0, k, T(1), wg, k, b + j0, out_plane, beta, yg + j0,
                   out_plane);
        for (int64_t m = 0; m < p.mg; ++m)
          epilogue.apply(yg + m * out_plane + j0, j1 - j0, nullptr,
                         zg ? zg + m * out_plane + j0 : nullptr);
      });
    } else if (threaded) {
      blas::parallel_gemm(ctx.pool, false, false, p.mg, out_plane, k, T(1), wg, k, b, out_plane,
                          beta, yg, out_plane);
    } else {
      blas::gemm(false, false, p.mg, out_plane, k, T(1), wg, k, b, out_plane, beta, yg, out_plane);
    }
  };

  // Per-thread im2col buffers are only worth it while they stay small.
  constexpr int64_t kMaxPerThreadColBytes = 8 << 20;
  const bool per_item = ctx.pool.size() > 1 && items >= ctx.pool.size() &&
                        col_elems * static_cast<int64_t>(sizeof(T)) <= kMaxPerThreadColBytes;
  if (per_item) {
    ctx.pool.parallel_for(items, 1, [&](int64_t begin, int64_t end) {
      Tensor col = Tensor::empty(Shape{col_elems}, dtype_of<T>);
      for (int64_t item = begin; item < end; ++item) run_item(item, col.data<T>(), false);
    });
  } else {
    Tensor col = Tensor::empty(Shape{col_elems}, dtype_of<T>);
    for (int64_t item = 0; item < items; ++item) run_item(item, col.data<T>(), true);
  }
}

template <class T>
void conv2d(KernelContext &ctx) {
  conv2d_with_epilogue<T>(ctx, nullptr, Epilogue<T>());
}

// fused_conv(x, w, b?, z?): act(conv2d(x, w) + b + z).
template <class T>
void fused_conv(KernelContext &ctx) {
  const Tensor *z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (z && z->shape() != ctx.output(0).shape())
    ctx.fail("residual z ", z->shape().to_string(), " does not match the output ",
             ctx.output(0).shape().to_string());
  conv2d_with_epilogue<T>(ctx, z ? z->data<T>() : nullptr, Epilogue<T>(ctx));
}

LUMEN_REGISTER_KERNEL("cpu", "conv2d", conv2d<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "conv2d", conv2d<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "fused_conv", fused_conv<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "fused_conv", fused_conv<double>, DType::Float64);

}  // namespace
}  // namespace lumen
