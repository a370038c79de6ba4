// Element-wise kernels on Vulkan (float32): binary ops with broadcasting (binary.comp; variadic
// max/min fold their inputs pairwise into the output) and activations and math (unary.comp).
#include <limits>
#include <optional>

#include "backends/common/activation_code.h"
#include "backends/vulkan/kernels/strided.h"
#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {
namespace {

constexpr uint32_t kPow = 4;

// pow's 64-bit integer exponent is read by its low word: the host copy must fit 32 bits.
void check_exponent_fits(KernelContext &ctx) {
  const Tensor *host = ctx.host_input(1);
  if (!host) ctx.fail("a 64-bit integer exponent made on the device");
  for (int64_t k = 0; k < host->numel(); ++k) {
    const bool fits = host->dtype() == DType::Int64 ? host->data<int64_t>()[k] >= INT32_MIN &&
                                                          host->data<int64_t>()[k] <= INT32_MAX
                                                    : host->data<uint64_t>()[k] <= INT32_MAX;
    if (!fits) ctx.fail("an exponent beyond 32 bits");
  }
}

void run_binary(KernelContext &ctx, uint32_t op) {
  Tensor &out = ctx.output(0);
  const Shape &shape = out.shape();
  const std::vector<int64_t> own = contiguous_strides(shape);
  if (ctx.inputs.size() == 1) return strided_copy(ctx, ctx.input(0), out, shape, own, own);
  const Tensor *acc = &ctx.input(0);
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const Tensor &b = ctx.input(i);
    // An integer exponent (pow) is read as integers.
    uint32_t b_type = 0;
    switch (b.dtype()) {
      case DType::Float32:
        break;
      case DType::Int32:
        b_type = 1;
        break;
      case DType::Int64:
      case DType::UInt64:
        b_type = 2;
        break;
      case DType::UInt32:
        b_type = 3;
        break;
      default:
        ctx.fail("the Vulkan kernel takes float32 or integer inputs; input ", i, " is ",
                 dtype_name(b.dtype()));
    }
    if (b_type && op != kPow) ctx.fail("integer inputs only as pow's exponent");
    if (b_type == 2) check_exponent_fits(ctx);
    // The accumulator and b read over the output's region; the output written contiguously
    // (its offset is the piece's place in the output).
    struct Push {
      uint32_t n, op, rank, a_off, b_off, c_off, b_type;
      uint32_t shape[kMaxDims], a_stride[kMaxDims], b_stride[kMaxDims];
    };
    const std::vector<int64_t> sa = broadcast_strides(acc->shape(), shape),
                               sb = broadcast_strides(b.shape(), shape);
    // Pieces come in the output's row-major order, each a contiguous block of it.
    uint64_t written = 0;
    for (const RegionPiece &piece : collapse(ctx, shape, sa, sb)) {
      const Region &r = piece.region;
      if (r.count > std::numeric_limits<uint32_t>::max()) ctx.fail("over 2^32 elements");
      Push push{};
      push.n = static_cast<uint32_t>(r.count);
      push.op = op;
      push.rank = r.rank;
      push.b_type = b_type;
      push.a_off = static_cast<uint32_t>(element_offset(*acc) + piece.offset[0]);
      push.b_off = static_cast<uint32_t>(element_offset(b) + piece.offset[1]);
      for (uint32_t d = 0; d < r.rank; ++d) {
        push.shape[d] = r.shape[d];
        push.a_stride[d] = r.stride[0][d];
        push.b_stride[d] = r.stride[1][d];
      }
      push.c_off = static_cast<uint32_t>(element_offset(out) + written);
      written += r.count;
      const Groups g = groups_for(r.count);
      dispatch(ctx, shaders::binary, {acc, &b, &out}, push, g.x, g.y);
    }
    acc = &out;
  }
}

template <uint32_t Op>
void binary(KernelContext &ctx) {
  run_binary(ctx, Op);
}

// An activation or unary math op (unary.comp applies it by its code, activation_code.h).
void unary(KernelContext &ctx) {
  const std::optional<Activation> a = activation_of(ctx.op, ctx.attrs);
  if (!a) ctx.fail("no Vulkan activation code for this op");
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t n = x.numel();
  if (n > std::numeric_limits<uint32_t>::max()) ctx.fail("over 2^32 elements");
  struct Push {
    uint32_t n, op, x_off, y_off;
    float alpha, beta;
  } push{static_cast<uint32_t>(n), a->code,  element_offset(x),
         element_offset(y),        a->alpha, a->beta};
  const Groups g = groups_for(static_cast<uint64_t>(n));
  if (n) dispatch(ctx, shaders::unary, {&x, &y}, push, g.x, g.y);
}

}  // namespace

#define LUMEN_VULKAN_KERNEL(op, fn) LUMEN_REGISTER_KERNEL("vulkan", op, fn, DType::Float32)
LUMEN_VULKAN_KERNEL("add", binary<0>);
LUMEN_VULKAN_KERNEL("sub", binary<1>);
LUMEN_VULKAN_KERNEL("mul", binary<2>);
LUMEN_VULKAN_KERNEL("div", binary<3>);
LUMEN_VULKAN_KERNEL("pow", binary<4>);
LUMEN_VULKAN_KERNEL("maximum", binary<5>);
LUMEN_VULKAN_KERNEL("minimum", binary<6>);
LUMEN_VULKAN_KERNEL("relu", unary);
LUMEN_VULKAN_KERNEL("leaky_relu", unary);
LUMEN_VULKAN_KERNEL("sigmoid", unary);
LUMEN_VULKAN_KERNEL("tanh", unary);
LUMEN_VULKAN_KERNEL("gelu", unary);
LUMEN_VULKAN_KERNEL("silu", unary);
LUMEN_VULKAN_KERNEL("elu", unary);
LUMEN_VULKAN_KERNEL("softplus", unary);
LUMEN_VULKAN_KERNEL("hard_sigmoid", unary);
LUMEN_VULKAN_KERNEL("hard_swish", unary);
LUMEN_VULKAN_KERNEL("exp", unary);
LUMEN_VULKAN_KERNEL("log", unary);
LUMEN_VULKAN_KERNEL("sqrt", unary);
LUMEN_VULKAN_KERNEL("neg", unary);
LUMEN_VULKAN_KERNEL("abs", unary);
LUMEN_VULKAN_KERNEL("clip", unary);
LUMEN_VULKAN_KERNEL("erf", unary);

}  // namespace lumen::vulkan
