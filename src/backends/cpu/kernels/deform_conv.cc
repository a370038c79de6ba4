// CPU DeformConv (float32): per image and group, the deformable im2col — each column holds, for
// one output position, the input sampled bilinearly at every tap moved by its learned offset and
// scaled by its mask (corners outside the image read 0) — then one packed GEMM with the group's
// weights, and the bias. Columns are built in parallel by rows (channel, tap). The semantics are
// the reference's (backends/reference/kernels/sampling.cc).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/gemm/sgemm.h"
#include "core/kernel.h"

namespace lumen {
namespace {

void deform_conv(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1), &offset = ctx.input(2);
  Tensor &y = ctx.output(0);
  const int64_t group = ctx.attrs.get_int("group", 1), og = ctx.attrs.get_int("offset_group", 1);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t OH = y.shape()[2], OW = y.shape()[3];
  const auto s = ctx.attrs.get_ints("strides", {1, 1}), d = ctx.attrs.get_ints("dilations", {1, 1});
  const auto p = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  if (offset.shape()[0] != N) ctx.fail("offset ", offset.shape().to_string(), " does not match");
  const int64_t taps = KH * KW, pixels = OH * OW, MG = M / group, CO = C / og;
  if (ctx.has_input(4)) {
    const Shape &ms = ctx.input(4).shape();
    if (ms[0] != N || ms[1] != og * taps || ms[2] != OH || ms[3] != OW)
      ctx.fail("mask ", ms.to_string(), " does not match");
  }
  const float *xs = x.data<float>(), *ws = w.data<float>(), *os = offset.data<float>();
  const float *mask = ctx.has_input(4) ? ctx.input(4).data<float>() : nullptr;
  const float *bias = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  float *ys = y.data<float>();
  const int64_t depth = CG * taps;
  Tensor columns = Tensor::empty(Shape{depth, pixels}, DType::Float32);
  float *cols = columns.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < group; ++g) {
      ctx.pool.parallel_for(depth, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t cc = r / taps, t = r % taps, u = t / KW, v = t % KW;
          const int64_t c = g * CG + cc, o = c / CO;
          const float *img = xs + (n * C + c) * H * W;
          const float *dy = os + ((n * og + o) * taps + t) * 2 * pixels, *dx = dy + pixels;
          const float *mk = mask ? mask + ((n * og + o) * taps + t) * pixels : nullptr;
          float *row = cols + r * pixels;
          const auto at = [&](int64_t yy, int64_t xx) {
            return yy >= 0 && yy < H && xx >= 0 && xx < W ? double(img[yy * W + xx]) : 0.0;
          };
          for (int64_t i = 0; i < OH; ++i)
            for (int64_t j = 0; j < OW; ++j) {
              const int64_t q = i * OW + j;
              const double py = double(i * s[0] - p[0] + u * d[0]) + dy[q];
              const double px = double(j * s[1] - p[1] + v * d[1]) + dx[q];
              double val = 0;
              if (py > -1 && py < double(H) && px > -1 && px < double(W)) {  // NaN: outside
                const double fy = std::floor(py), fx = std::floor(px);
                const auto y0 = int64_t(fy), x0 = int64_t(fx);
                const double ly = py - fy, lx = px - fx;
                val = (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) +
                      ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1);
              }
              row[q] = float(mk ? val * double(mk[q]) : val);
            }
        }
      });
      float *out = ys + (n * M + g * MG) * pixels;
      cpu::sgemm(ctx.pool, MG, pixels, depth, cpu::StridedA(ws + g * MG * depth, depth, false),
                 cpu::StridedB(cols, pixels, false), out, pixels);
      if (bias)
        for (int64_t m = 0; m < MG; ++m)
          for (int64_t q = 0; q < pixels; ++q) out[m * pixels + q] += bias[g * MG + m];
    }
}

LUMEN_REGISTER_KERNEL("cpu", "deform_conv", deform_conv, DType::Float32);

}  // namespace
}  // namespace lumen
