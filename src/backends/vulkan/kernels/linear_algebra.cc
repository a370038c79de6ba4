// MatMul and Gemm on Vulkan, and their fused forms (epilogue: bias, activation) (matmul.comp:
// 64x64 tiles, strides for transposes and broadcast batches) and softmax / log-softmax along any
// axis (softmax.comp), float32.
#include <limits>

#include "backends/common/activation_code.h"
#include "backends/common/axis_layout.h"
#include "backends/vulkan/kernels/strided.h"
#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

constexpr uint32_t kTile = 64;

struct MatmulPush {
  uint32_t M, N, K, a_off, b_off, bias_off, c_off;
  uint32_t a_rs, a_cs, b_rs, b_cs, bias_rs, bias_cs, flags;
  float alpha, beta;
  uint32_t batch1, batch2;
  uint32_t a_bs[3], b_bs[3];
  uint32_t act;  // set by run_matmul from the node's epilogue
  float act_alpha, act_beta;
};

// Runs matmul.comp for `batch` products (batch dims `batch_dims`, A and B strides per batch dim).
void run_matmul(KernelContext &ctx, const Tensor &a, const Tensor &b, const Tensor *bias, Tensor &c,
                MatmulPush push, const std::vector<int64_t> &batch_dims,
                const std::vector<int64_t> &a_bs, const std::vector<int64_t> &b_bs) {
  if (c.numel() == 0) return;
  const Activation act = epilogue_activation(ctx.attrs);
  push.act = act.code, push.act_alpha = act.alpha, push.act_beta = act.beta;
  push.c_off = element_offset(c);
  if (bias) push.bias_off = element_offset(*bias), push.flags |= 1;
  // Batch dims merged where both operands step evenly across them (strided.h); beyond 3, one
  // dispatch per index of the leading ones.
  int64_t done = 0;
  for (const RegionPiece &piece : collapse(ctx, Shape(batch_dims), a_bs, b_bs, 3)) {
    const Region &r = piece.region;
    uint32_t dims[3] = {1, 1, 1};
    for (uint32_t d = 0, at = 3 - r.rank; d < r.rank; ++d, ++at) {
      dims[at] = r.shape[d];
      push.a_bs[at] = r.stride[0][d];
      push.b_bs[at] = r.stride[1][d];
    }
    push.batch1 = dims[1];
    push.batch2 = dims[2];
    push.a_off = u32(ctx, element_offset(a) + piece.offset[0]);
    push.b_off = u32(ctx, element_offset(b) + piece.offset[1]);
    MatmulPush at = push;
    at.c_off = u32(ctx, push.c_off + done * push.M * push.N);
    done += static_cast<int64_t>(r.count);
    // K = 0 sums nothing: the output is the bias term alone, as ONNX says.
    dispatch(ctx, shaders::matmul, {&a, &b, bias ? bias : &a, &c}, at, (push.N + kTile - 1) / kTile,
             (push.M + kTile - 1) / kTile, u32(ctx, r.count));
  }
}

void matmul(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &c = ctx.output(0);
  // Vectors as matrices: A [K] -> [1, K], B [K] -> [K, 1].
  Shape sa = a.shape(), sb = b.shape();
  if (sa.rank() == 1) sa = Shape{1, sa[0]};
  if (sb.rank() == 1) sb = Shape{sb[0], 1};
  const int64_t M = sa[sa.rank() - 2], K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
  const size_t batch_rank = std::max(sa.rank(), sb.rank()) - 2;
  std::vector<int64_t> batch(batch_rank, 1), a_bs(batch_rank, 0), b_bs(batch_rank, 0);
  const auto batch_of = [&](const Shape &s, std::vector<int64_t> &strides) {
    const size_t own = s.rank() - 2, shift = batch_rank - own;
    int64_t step = s[s.rank() - 2] * s[s.rank() - 1];
    for (size_t d = own; d-- > 0;) {
      batch[d + shift] = std::max(batch[d + shift], s[d]);
      strides[d + shift] = s[d] == 1 ? 0 : step;
      step *= s[d];
    }
  };
  batch_of(sa, a_bs);
  batch_of(sb, b_bs);
  MatmulPush push{};
  push.M = u32(ctx, M), push.N = u32(ctx, N), push.K = u32(ctx, K);
  push.a_rs = u32(ctx, K), push.a_cs = 1, push.b_rs = u32(ctx, N), push.b_cs = 1;
  push.alpha = 1;
  // fused_matmul's bias: [N], added to every row.
  const Tensor *bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (bias) {
    if (bias->numel() != N) ctx.fail("bias must hold N = ", N, " values, got ", bias->numel());
    push.beta = 1, push.bias_rs = 0, push.bias_cs = 1;
  }
  run_matmul(ctx, a, b, bias, c, push, batch, a_bs, b_bs);
}

void gemm(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &c = ctx.output(0);
  const bool ta = ctx.attrs.get_int("transA", 0) != 0, tb = ctx.attrs.get_int("transB", 0) != 0;
  const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
  const int64_t N = tb ? b.shape()[0] : b.shape()[1];
  MatmulPush push{};
  push.M = u32(ctx, M), push.N = u32(ctx, N), push.K = u32(ctx, K);
  // Element (m, k) of op(A) is at m * rs + k * cs: a transpose swaps the strides.
  push.a_rs = u32(ctx, ta ? 1 : K), push.a_cs = u32(ctx, ta ? M : 1);
  push.b_rs = u32(ctx, tb ? 1 : N), push.b_cs = u32(ctx, tb ? K : 1);
  push.alpha = static_cast<float>(ctx.attrs.get_float("alpha", 1.0));
  push.beta = static_cast<float>(ctx.attrs.get_float("beta", 1.0));
  const Tensor *bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (bias) {
    const std::vector<int64_t> s = broadcast_strides(bias->shape(), Shape{M, N});
    push.bias_rs = u32(ctx, s[0]), push.bias_cs = u32(ctx, s[1]);
  }
  run_matmul(ctx, a, b, bias, c, push, {}, {}, {});
}

void run_softmax(KernelContext &ctx, bool log) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const Shape &s = x.shape();
  if (x.numel() == 0) return;
  const AxisSplit at = split_at(s, s.normalize_axis(ctx.attrs.get_int("axis", -1)));
  struct Push {
    uint32_t rows, len, inner, x_off, y_off, log_softmax;
  } push{u32(ctx, at.outer * at.inner),
         u32(ctx, at.len),
         u32(ctx, at.inner),
         element_offset(x),
         element_offset(y),
         log ? 1u : 0u};
  const Groups g = row_groups(push.rows);
  dispatch(ctx, reduction_shader(shaders::softmax, shaders::softmax_subgroup), {&x, &y}, push, g.x,
           g.y);
}
void softmax(KernelContext &ctx) {
  run_softmax(ctx, false);
}
void log_softmax(KernelContext &ctx) {
  run_softmax(ctx, true);
}

}  // namespace

LUMEN_REGISTER_KERNEL("vulkan", "matmul", matmul, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "gemm", gemm, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "fused_matmul", matmul, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "fused_gemm", gemm, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "softmax", softmax, DType::Float32);
LUMEN_REGISTER_KERNEL("vulkan", "log_softmax", log_softmax, DType::Float32);

}  // namespace lumen::vulkan
