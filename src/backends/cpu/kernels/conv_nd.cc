// CPU conv_nd (float32): convolution with any number of spatial dims (1-D audio, 3-D video),
// groups, strides, pads and dilations, as im2col + the packed GEMM. Per image and group, the
// column matrix [C/group * prod(kernel), prod(output)] is gathered (zeros where a tap falls in
// the padding; rows shared out over the pool), then W_g [M/group, C/group * prod(kernel)] times it
// gives the output rows, to which the bias is added.
#include <algorithm>
#include <vector>

#include "backends/cpu/gemm/sgemm.h"
#include "core/kernel.h"

namespace lumen {
namespace {

void conv_nd(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  Tensor &ty = ctx.output(0);
  const size_t k = tx.rank() - 2;
  const std::vector<int64_t> in(tx.shape().begin() + 2, tx.shape().end());
  const std::vector<int64_t> out(ty.shape().begin() + 2, ty.shape().end());
  const std::vector<int64_t> kernel(tw.shape().begin() + 2, tw.shape().end());
  const auto strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(k, 1));
  const auto pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * k, 0));
  const auto dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(k, 1));
  const int64_t n = tx.shape()[0], c = tx.shape()[1], m = tw.shape()[0];
  const int64_t group = ctx.attrs.get_int("group", 1);
  if (group < 1 || c % group != 0 || m % group != 0 || tw.shape()[1] != c / group ||
      strides.size() != k || pads.size() != 2 * k || dilations.size() != k)
    ctx.fail("input ", tx.shape().to_string(), ", weight ", tw.shape().to_string(), " and group ",
             group, " do not fit");
  const int64_t cg = c / group, mg = m / group;
  int64_t in_size = 1, out_size = 1, taps = 1;
  for (size_t d = 0; d < k; ++d) in_size *= in[d], out_size *= out[d], taps *= kernel[d];
  const int64_t depth = checked_mul(cg, taps, "conv_nd GEMM depth");
  if (ty.numel() == 0) return;
  std::vector<float> col(static_cast<size_t>(checked_mul(depth, out_size, "conv_nd columns")));
  const float *x = tx.data<float>(), *w = tw.data<float>();
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float *y = ty.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x + (b * c + g * cg) * in_size;
      ctx.pool.parallel_for(
          depth, std::max<int64_t>(1, (1 << 14) / out_size), [&](int64_t begin, int64_t end) {
            std::vector<int64_t> tap(k), pos(k);
            for (int64_t row = begin; row < end; ++row) {
              const int64_t channel = row / taps;
              for (int64_t rem = row % taps, d = int64_t(k); d-- > 0;) {
                tap[size_t(d)] = rem % kernel[size_t(d)];
                rem /= kernel[size_t(d)];
              }
              const float *plane = xg + channel * in_size;
              float *dst = col.data() + row * out_size;
              std::fill(pos.begin(), pos.end(), 0);
              for (int64_t o = 0; o < out_size; ++o) {
                int64_t off = 0;
                bool inside = true;
                for (size_t d = 0; d < k; ++d) {
                  const int64_t i = pos[d] * strides[d] - pads[d] + tap[d] * dilations[d];
                  inside = inside && i >= 0 && i < in[d];
                  off = off * in[d] + i;
                }
                dst[o] = inside ? plane[off] : 0.f;
                for (size_t d = k; d-- > 0;) {  // next output position
                  if (++pos[d] < out[d]) break;
                  pos[d] = 0;
                }
              }
            }
          });
      float *yg = y + (b * m + g * mg) * out_size;
      cpu::sgemm(ctx.pool, mg, out_size, depth, cpu::StridedA(w + g * mg * depth, depth, false),
                 cpu::StridedB(col.data(), out_size, false), yg, out_size);
      if (bias)
        for (int64_t r = 0; r < mg; ++r) {
          const float v = bias[g * mg + r];
          for (int64_t o = 0; o < out_size; ++o) yg[r * out_size + o] += v;
        }
    }
}

LUMEN_REGISTER_KERNEL("cpu", "conv_nd", conv_nd, DType::Float32);

}  // namespace
}  // namespace lumen
