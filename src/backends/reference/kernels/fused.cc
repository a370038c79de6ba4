// Reference fused_conv, fused_gemm and fused_matmul: the registered reference conv2d / gemm /
// matmul kernel computes the product into the output, then the shared epilogue adds the bias or
// residual and applies the activation over the whole tensor. fused_conv_max_pool: the conv into a
// whole temporary, then the pool. Obviously the unfused sequence, which is what the CPU
// kernels are tested against.
#include <vector>

#include "backends/common/epilogue.h"
#include "core/kernel.h"
#include "graph/ops/conv_max_pool.h"

namespace lumen {
namespace {

// Runs the reference kernel of `op` on `inputs`, writing `outputs` (default: the fused node's)
// with attributes `attrs` (default: the fused node's).
template <class T>
void run_reference(KernelContext &ctx, std::string_view op, std::vector<const Tensor *> inputs,
                   std::vector<Tensor *> outputs = {}, const Attributes *attrs = nullptr) {
  const KernelFn fn = kernel_registry("reference").find(op, dtype_of<T>);
  if (!fn) ctx.fail("no reference ", op, " kernel for ", dtype_name(dtype_of<T>));
  KernelContext inner{.inputs = std::move(inputs),
                      .outputs = outputs.empty() ? ctx.outputs : std::move(outputs),
                      .attrs = attrs ? *attrs : ctx.attrs,
                      .pool = ctx.pool,
                      .stream = ctx.stream,
                      .op = ctx.op,
                      .node = ctx.node};
  fn(inner);
}

const Tensor *optional_input(const KernelContext &ctx, size_t i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

template <class T>
void fused_conv(KernelContext &ctx) {
  const Epilogue<T> epilogue(ctx);
  run_reference<T>(ctx, "conv2d", {&ctx.input(0), &ctx.input(1), optional_input(ctx, 2)});
  Tensor &y = ctx.output(0);
  const T *residual = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
  if (residual && ctx.input(3).numel() != y.numel())
    ctx.fail("residual z ", ctx.input(3).shape().to_string(), " does not match the output ",
             y.shape().to_string());
  epilogue.apply(y.data<T>(), y.numel(), nullptr, residual);
}

template <class T>
void fused_gemm(KernelContext &ctx) {
  const Epilogue<T> epilogue(ctx);
  run_reference<T>(ctx, "gemm", {&ctx.input(0), &ctx.input(1), optional_input(ctx, 2)});
  Tensor &y = ctx.output(0);
  epilogue.apply(y.data<T>(), y.numel(), nullptr, nullptr);
}

template <class T>
void fused_matmul(KernelContext &ctx) {
  const Epilogue<T> epilogue(ctx);
  run_reference<T>(ctx, "matmul", {&ctx.input(0), &ctx.input(1)});
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  const T *bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  // The bias runs along the last dim: one epilogue call per output row.
  const int64_t n = y.shape().rank() == 0 ? 1 : y.shape()[y.shape().rank() - 1];
  if (bias && ctx.input(2).numel() != n)
    ctx.fail("bias ", ctx.input(2).shape().to_string(), " does not match the output's last dim ",
             n);
  T *out = y.data<T>();
  for (int64_t row = 0; row < y.numel() / n; ++row) epilogue.apply(out + row * n, n, bias, nullptr);
}

// The conv into a whole temporary, then the pool over it.
template <class T>
void fused_conv_max_pool(KernelContext &ctx) {
  const Attributes conv_attrs = conv_stage_attributes(ctx.attrs);
  const Attributes pool_attrs = pool_stage_attributes(ctx.attrs);
  Tensor t = Tensor::empty(
      conv_stage_output_shape(ctx.input(0).shape(), ctx.input(1).shape(), conv_attrs), dtype_of<T>);
  run_reference<T>(ctx, "fused_conv", {&ctx.input(0), &ctx.input(1), optional_input(ctx, 2)}, {&t},
                   &conv_attrs);
  run_reference<T>(ctx, "max_pool2d", {&t}, {}, &pool_attrs);
}

LUMEN_REGISTER_KERNEL("reference", "fused_conv", fused_conv<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "fused_conv", fused_conv<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "fused_conv_max_pool", fused_conv_max_pool<float>,
                      DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "fused_conv_max_pool", fused_conv_max_pool<double>,
                      DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "fused_gemm", fused_gemm<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "fused_gemm", fused_gemm<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "fused_matmul", fused_matmul<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "fused_matmul", fused_matmul<double>, DType::Float64);

}  // namespace
}  // namespace lumen
