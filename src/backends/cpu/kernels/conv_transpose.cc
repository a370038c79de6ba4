// CPU conv_transpose for float32 with any number of spatial dims (1-D, 2-D, 3-D, ...):
// x [N, C, D1..Ds], w [C, M/group, K1..Ks]. Per (image, group) one GEMM on Lumen's sgemm,
// cols [mg * K1..Ks, D1..Ds] = W_g^T X_g, then col2im adds each row of cols into its output plane
// at the kernel tap's offset (the transpose of conv's im2col): along dim d, input i lands on
// output i * stride - pad_begin + k * dilation. Rows of the last dim run as one loop over the
// input positions that land inside the output. The planes start at the bias. The GEMM runs over
// the pool and col2im over output channels, so no two threads add to one plane (ONNX semantics:
// output_padding and output_shape are already in y's shape and the pads).
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
  if (!w || w->dtype() != DType::Float32 || w->rank() < 3) return nullptr;
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
  if (tx.rank() < 3 || tw.rank() != tx.rank() || ty.rank() != tx.rank())
    ctx.fail("expected x, w and y of one rank, at least 3; got ", tx.shape().to_string(), ", ",
             tw.shape().to_string(), " and ", ty.shape().to_string());
  const size_t dims = tx.rank() - 2;  // spatial
  const auto per_dim = [&](const char *name, int64_t value, size_t count) {
    const auto v = ctx.attrs.get_ints(name, std::vector<int64_t>(count, value));
    if (v.size() != count) ctx.fail(name, " holds ", v.size(), " values, expected ", count);
    return v;
  };
  const auto strides = per_dim("strides", 1, dims), dilations = per_dim("dilations", 1, dims);
  const auto pads = per_dim("pads", 0, 2 * dims);
  const int64_t group = ctx.attrs.get_int("group", 1);
  const int64_t n = tx.shape()[0], c = tx.shape()[1], mg = tw.shape()[1], m = ty.shape()[1];
  if (group < 1 || c % group != 0 || tw.shape()[0] != c || m != mg * group)
    ctx.fail("channels do not match: input ", tx.shape().to_string(), ", weight ",
             tw.shape().to_string(), ", group ", group);
  if (ty.numel() == 0) return;
  std::vector<int64_t> in(dims), kernel(dims), out(dims);
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (size_t d = 0; d < dims; ++d) {
    in[d] = tx.shape()[2 + d], kernel[d] = tw.shape()[2 + d], out[d] = ty.shape()[2 + d];
    in_plane = checked_mul(in_plane, in[d]);
    out_plane = checked_mul(out_plane, out[d]);
    taps = checked_mul(taps, kernel[d]);
  }
  const int64_t cg = c / group, rows = checked_mul(mg, taps, "conv_transpose GEMM rows");
  const float *x = tx.data<float>(), *wt = tw.data<float>();
  const float *bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float *y = ty.data<float>();
  ctx.pool.parallel_for(n * m, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane)
      std::fill_n(y + plane * out_plane, out_plane, bias ? bias[plane % m] : 0.0f);
  });
  if (in_plane == 0) return;
  const size_t last = dims - 1;
  const int64_t in_rows = in_plane / in[last];  // input positions of all dims but the last
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
        std::vector<int64_t> tap(dims);
        for (int64_t ml = m0; ml < m1; ++ml)
          for (int64_t t = 0; t < taps; ++t) {
            for (size_t d = dims, rest = size_t(t); d-- > 0; rest /= size_t(kernel[d]))
              tap[d] = int64_t(rest % size_t(kernel[d]));
            const float *src = pc + (ml * taps + t) * in_plane;
            // Along the last dim: the inputs whose output lies inside the plane, found once.
            const int64_t offset = tap[last] * dilations[last] - pads[last];
            int64_t lo = 0, hi = 0;
            valid_range(offset, strides[last], out[last], in[last], lo, hi);
            if (lo >= hi) continue;
            for (int64_t r = 0; r < in_rows; ++r) {
              // The output row of input row r (its index in every dim but the last), if inside.
              int64_t out_row = 0, rest = r, scale = 1;
              bool inside = true;
              for (size_t d = last; d-- > 0;) {
                const int64_t i = rest % in[d];
                rest /= in[d];
                const int64_t o = i * strides[d] - pads[d] + tap[d] * dilations[d];
                inside = inside && o >= 0 && o < out[d];
                out_row += o * scale;
                scale *= out[d];
              }
              if (!inside) continue;
              float *dst = yg + ml * out_plane + out_row * out[last];
              const float *row = src + r * in[last];
              for (int64_t i = lo; i < hi; ++i) dst[i * strides[last] + offset] += row[i];
            }
          }
      });
    }
}

LUMEN_REGISTER_KERNEL("cpu", "conv_transpose", conv_transpose, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "conv_transpose", prepare_conv_transpose, DType::Float32);

}  // namespace
}  // namespace lumen
