// Reference kernels of the channel-blocked layout (graph/ops/nchwc.cc): the reorders as plain
// index arithmetic; nchwc_conv and the pools as from_nchwc (unless x is plain), the reference
// fused_conv or pool, to_nchwc; nchwc_pointwise_depthwise as its two fused_convs on plain tensors.
#include <optional>
#include <vector>

#include "core/kernel.h"
#include "graph/ops/pointwise_depthwise.h"

namespace lumen {
namespace {

struct Blocking {
  int64_t images, blocks, pixels, block;
};

Blocking blocking_of(const Shape &blocked) {
  return {blocked[0], blocked[1], blocked[2] * blocked[3], blocked[4]};
}

// plain [N, C, HW] <-> blocked [N, C / c, HW, c], one direction or the other.
template <class T>
void reorder(const Blocking &b, const T *src, T *dst, bool to_blocked) {
  for (int64_t n = 0; n < b.images; ++n)
    for (int64_t cb = 0; cb < b.blocks; ++cb)
      for (int64_t p = 0; p < b.pixels; ++p)
        for (int64_t l = 0; l < b.block; ++l) {
          const int64_t plain = ((n * b.blocks + cb) * b.block + l) * b.pixels + p;
          const int64_t blocked = ((n * b.blocks + cb) * b.pixels + p) * b.block + l;
          if (to_blocked)
            dst[blocked] = src[plain];
          else
            dst[plain] = src[blocked];
        }
}

template <class T>
void to_nchwc(KernelContext &ctx) {
  reorder(blocking_of(ctx.output(0).shape()), ctx.input(0).data<T>(), ctx.output(0).data<T>(),
          true);
}

template <class T>
void from_nchwc(KernelContext &ctx) {
  reorder(blocking_of(ctx.input(0).shape()), ctx.input(0).data<T>(), ctx.output(0).data<T>(),
          false);
}

Shape plain_shape(const Shape &blocked) {
  return Shape{blocked[0], blocked[1] * blocked[4], blocked[2], blocked[3]};
}

Tensor unblock(const Tensor &blocked) {
  Tensor plain = Tensor::empty(plain_shape(blocked.shape()), blocked.dtype());
  reorder(blocking_of(blocked.shape()), blocked.data<float>(), plain.data<float>(), false);
  return plain;
}

// The reference kernel of plain op `op` with `attrs` on `inputs` (unblocked already), into
// plain_y.
void run_plain_op(KernelContext &ctx, const char *op, Attributes attrs,
                  const std::vector<const Tensor *> &inputs, Tensor &plain_y) {
  const KernelFn plain_op = kernel_registry("reference").find(op, DType::Float32);
  if (!plain_op) ctx.fail("no reference ", op, " kernel");
  attrs.erase("block");
  KernelContext inner{.inputs = inputs,
                      .outputs = {&plain_y},
                      .attrs = attrs,
                      .pool = ctx.pool,
                      .stream = ctx.stream,
                      .op = ctx.op,
                      .node = ctx.node};
  plain_op(inner);
}

// The same with the step's attributes, its output blocked into the step's.
void run_plain(KernelContext &ctx, const char *op, const std::vector<const Tensor *> &inputs) {
  Tensor &y = ctx.output(0);
  Tensor plain_y = Tensor::empty(plain_shape(y.shape()), y.dtype());
  run_plain_op(ctx, op, ctx.attrs, inputs, plain_y);
  reorder(blocking_of(y.shape()), plain_y.data<float>(), y.data<float>(), true);
}

void nchwc_conv(KernelContext &ctx) {
  const Tensor x = ctx.input(0).rank() == 4 ? ctx.input(0) : unblock(ctx.input(0));
  std::optional<Tensor> z;
  if (ctx.has_input(3)) z = unblock(ctx.input(3));
  run_plain(ctx, "fused_conv",
            {&x, &ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, z ? &*z : nullptr});
}

// The pointwise conv into a plain t, then the depthwise conv on it.
void nchwc_pointwise_depthwise(KernelContext &ctx) {
  const Tensor x = unblock(ctx.input(0));
  const Shape &w1 = ctx.input(1).shape();
  Tensor t = Tensor::empty(Shape{x.shape()[0], w1[0], x.shape()[2], x.shape()[3]}, x.dtype());
  run_plain_op(ctx, "fused_conv", pointwise_stage_attributes(ctx.attrs),
               {&x, &ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr}, t);
  Tensor &y = ctx.output(0);
  Tensor plain_y = Tensor::empty(plain_shape(y.shape()), y.dtype());
  run_plain_op(ctx, "fused_conv", depthwise_stage_attributes(ctx.attrs),
               {&t, &ctx.input(3), ctx.has_input(4) ? &ctx.input(4) : nullptr}, plain_y);
  reorder(blocking_of(y.shape()), plain_y.data<float>(), y.data<float>(), true);
}

template <const char *kPlainOp>
void nchwc_pool2d(KernelContext &ctx) {
  const Tensor x = unblock(ctx.input(0));
  run_plain(ctx, kPlainOp, {&x});
}

constexpr char kMaxPool[] = "max_pool2d";
constexpr char kAvgPool[] = "avg_pool2d";

LUMEN_REGISTER_KERNEL("reference", "to_nchwc", to_nchwc<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "from_nchwc", from_nchwc<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "nchwc_conv", nchwc_conv, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "nchwc_pointwise_depthwise", nchwc_pointwise_depthwise,
                      DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "nchwc_max_pool2d", nchwc_pool2d<kMaxPool>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "nchwc_avg_pool2d", nchwc_pool2d<kAvgPool>, DType::Float32);

}  // namespace
}  // namespace lumen
