// CPU conv_transpose for 2-D float32: x [N, C, H, W], w [C, M/group, KH, KW]. Per (image, group)
// one GEMM on Lumen's sgemm, cols [mg * kh * kw, H * W] = W_g^T X_g, then col2im adds each row of
// cols into its output plane at the kernel tap's offset (the transpose of conv's im2col): output
// (oy, ox) = (iy * sh - pt + a * dh, ix * sw - pl + b * dw). The planes start at the bias. The
// GEMM runs over the pool and col2im over output channels, so no two threads add to one plane.
// Other ranks and dtypes run the reference kernel (ONNX semantics: output_padding and
// output_shape are already in y's shape and the pads).
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/conv_params.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// The weights of every group as the GEMM's A = W_g^T ([mg * kh * kw, cg]), packed once.
struct PackedTransposeWeights {
  std::vector<cpu::PackedA> groups;
};

std::shared_ptr<const void> prepare_conv_transpose(const PrepareContext &ctx) {
  const Tensor *w = ctx.constant(1);
  if (!w || w->dtype() != DType::Float32 || w->rank() != 4) return nullptr;
  const int64_t group = ctx.attrs.get_int("group", 1), c = w->shape()[0];
  if (group < 1 || c % group != 0) return nullptr;
  const int64_t cg = c / group, rows = w->numel() / c;  // rows = mg * kh * kw
  auto packed = std::make_shared<PackedTransposeWeights>();
  const auto &kernel = cpu::default_f32_gemm_microkernel();
  for (int64_t g = 0; g < group; ++g)
    packed->groups.emplace_back(cpu::StridedA(w->data<float>() + g * cg * rows, rows, true), rows,
                                cg, kernel);
  return packed;
}

void conv_transpose(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  Tensor &ty = ctx.output(0);
  if (tx.rank() != 4 || tx.dtype() != DType::Float32) return run_reference_kernel(ctx);
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  const int64_t group = ctx.attrs.get_int("group", 1);
  const int64_t n = tx.shape()[0], c = tx.shape()[1], h = tx.shape()[2], w = tx.shape()[3];
  const int64_t mg = tw.shape()[1], kh = tw.shape()[2], kw = tw.shape()[3];
  const int64_t m = ty.shape()[1], oh = ty.shape()[2], ow = ty.shape()[3];
  if (group < 1 || c % group != 0 || tw.shape()[0] != c || m != mg * group)
    ctx.fail("channels do not match: input ", tx.shape().to_string(), ", weight ",
             tw.shape().to_string(), ", group ", group);
  if (ty.numel() == 0) return;
  const int64_t cg = c / group, in_plane = checked_mul(h, w), out_plane = checked_mul(oh, ow);
  const int64_t rows = checked_mul(checked_mul(mg, kh), kw, "conv_transpose GEMM rows");
  const float *x = tx.data<float>(), *wt = tw.data<float>();
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float *y = ty.data<float>();
  ctx.pool.parallel_for(n * m, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane)
      std::fill_n(y + plane * out_plane, out_plane, bias ? bias[plane % m] : 0.0f);
  });
  if (in_plane == 0) return;
  const auto *packed = static_cast<const PackedTransposeWeights *>(ctx.prepared);
  Tensor cols = Tensor::empty(Shape{checked_mul(rows, in_plane)}, DType::Float32);
  float *pc = cols.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < group; ++g) {
      const cpu::StridedA plain_a(wt + g * cg * rows, rows, true);
      const cpu::GemmA &a = packed ? static_cast<const cpu::GemmA &>(packed->groups[g]) : plain_a;
      cpu::sgemm(ctx.pool, rows, in_plane, cg, a,
                 cpu::StridedB(x + (b * c + g * cg) * in_plane, in_plane, false), pc, in_plane);
      float *yg = y + (b * m + g * mg) * out_plane;
      ctx.pool.parallel_for(mg, 1, [&](int64_t m0, int64_t m1) {
        for (int64_t ml = m0; ml < m1; ++ml)
          for (int64_t ka = 0; ka < kh; ++ka)
            for (int64_t kb = 0; kb < kw; ++kb) {
              const float *src = pc + ((ml * kh + ka) * kw + kb) * in_plane;
              // Input columns whose output column lies inside the plane, found once per tap.
              const int64_t offset = kb * dilations[1] - pads[1];
              int64_t lo = 0, hi = 0;
              valid_range(offset, strides[1], ow, w, lo, hi);
              for (int64_t iy = 0; iy < h; ++iy) {
                const int64_t oy = iy * strides[0] - pads[0] + ka * dilations[0];
                if (oy < 0 || oy >= oh) continue;
                float *out = yg + ml * out_plane + oy * ow;
                const float *in = src + iy * w;
                for (int64_t ix = lo; ix < hi; ++ix) out[ix * strides[1] + offset] += in[ix];
              }
            }
      });
    }
}

LUMEN_REGISTER_KERNEL("cpu", "conv_transpose", conv_transpose, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "conv_transpose", prepare_conv_transpose, DType::Float32);

}  // namespace
}  // namespace lumen
