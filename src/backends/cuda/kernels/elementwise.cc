// Element-wise ops on CUDA (float32): binary ops with broadcasting (variadic max/min fold their
// inputs pairwise into the output) and the activations and math of activation_code.h.
#include "backends/common/activation_code.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

template <int Code>
void binary(KernelContext &ctx) {
  Tensor &out = ctx.output(0);
  const Shape &shape = out.shape();
  const std::vector<int64_t> own = contiguous_strides(shape);
  const cudaStream_t stream = stream_of(ctx);
  const Tensor *acc = &ctx.input(0);
  if (ctx.inputs.size() == 1) {
    const Walk w = make_walk(ctx, shape, broadcast_strides(acc->shape(), shape), own);
    return check_launch(ctx, launch_strided_copy(4, acc->raw_data(), out.raw_data(), w, stream));
  }
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const Tensor &b = ctx.input(i);
    // After the first input, the accumulator is the output itself, read where it is written.
    const Walk w = make_walk(ctx, shape, broadcast_strides(acc->shape(), shape),
                             broadcast_strides(b.shape(), shape));
    check_launch(
        ctx, launch_binary(Code, device_data(*acc), device_data(b), device_data(out), w, stream));
    acc = &out;
  }
}

// Every input float32 (an integer exponent of pow stays on the CPU).
std::string float_inputs(const NodeQuery &node) {
  for (const NodeQuery::Input &in : node.inputs)
    if (in.present && in.dtype != DType::Float32)
      return str("a ", dtype_name(in.dtype), " input (the CUDA kernel takes float32)");
  return "";
}

void unary(KernelContext &ctx) {
  const std::optional<Activation> a = activation_of(ctx.op, ctx.attrs);
  if (!a) ctx.fail("no CUDA activation code");
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const std::vector<int64_t> own = contiguous_strides(y.shape());
  check_launch(ctx, launch_unary(a->code, a->alpha, a->beta, device_data(x), device_data(y),
                                 make_walk(ctx, y.shape(), own, own), stream_of(ctx)));
}

}  // namespace

#define LUMEN_CUDA_BINARY(op, code)                                \
  LUMEN_REGISTER_KERNEL("cuda", op, binary<code>, DType::Float32); \
  LUMEN_REGISTER_SUPPORTS("cuda", op, float_inputs, DType::Float32)
LUMEN_CUDA_BINARY("add", kAdd);
LUMEN_CUDA_BINARY("sub", kSub);
LUMEN_CUDA_BINARY("mul", kMul);
LUMEN_CUDA_BINARY("div", kDiv);
LUMEN_CUDA_BINARY("pow", kPow);
LUMEN_CUDA_BINARY("maximum", kMax);
LUMEN_CUDA_BINARY("minimum", kMin);

#define LUMEN_CUDA_UNARY(op) LUMEN_REGISTER_KERNEL("cuda", op, unary, DType::Float32)
LUMEN_CUDA_UNARY("relu");
LUMEN_CUDA_UNARY("leaky_relu");
LUMEN_CUDA_UNARY("sigmoid");
LUMEN_CUDA_UNARY("tanh");
LUMEN_CUDA_UNARY("gelu");
LUMEN_CUDA_UNARY("silu");
LUMEN_CUDA_UNARY("elu");
LUMEN_CUDA_UNARY("softplus");
LUMEN_CUDA_UNARY("hard_sigmoid");
LUMEN_CUDA_UNARY("hard_swish");
LUMEN_CUDA_UNARY("exp");
LUMEN_CUDA_UNARY("log");
LUMEN_CUDA_UNARY("sqrt");
LUMEN_CUDA_UNARY("neg");
LUMEN_CUDA_UNARY("abs");
LUMEN_CUDA_UNARY("clip");
LUMEN_CUDA_UNARY("erf");

}  // namespace lumen::cuda
