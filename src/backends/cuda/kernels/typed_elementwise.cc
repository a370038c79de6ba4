// Element-wise ops on CUDA over several element types (typed_elementwise.cu): cast between the
// standard dtypes, where (any element of 1 to 8 bytes, with broadcasting) and the comparisons
// (float32, int32, int64 to bool, with broadcasting).
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

// The dtypes cast converts between on CUDA (the narrow types stay on the CPU).
bool castable(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float64:
    case DType::Int8:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
    case DType::Bool:
      return true;
    default:
      return false;
  }
}

std::string cast_limits(const NodeQuery &node) {
  const std::string to = node.attributes().get_string("to", "");
  try {
    if (castable(dtype_from_name(to))) return "";
  } catch (const Error &) {
  }
  return str("a cast to ", to);
}

void cast(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (!castable(y.dtype())) ctx.fail("a cast to ", dtype_name(y.dtype()));
  check_launch(ctx, launch_cast(element_type(ctx, x.dtype()), element_type(ctx, y.dtype()),
                                x.raw_data(), y.raw_data(), x.numel(), stream_of(ctx)));
}

void where(KernelContext &ctx) {
  const Tensor &cond = ctx.input(0), &a = ctx.input(1), &b = ctx.input(2);
  Tensor &y = ctx.output(0);
  const Shape &shape = y.shape();
  const Walk w =
      make_walk(ctx, shape, broadcast_strides(cond.shape(), shape),
                broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape));
  check_launch(ctx, launch_where(static_cast<int>(dtype_size(y.dtype())), device_data<bool>(cond),
                                 a.raw_data(), b.raw_data(), y.raw_data(), w, stream_of(ctx)));
}

template <int Code>
void compare(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (b.dtype() != a.dtype()) ctx.fail("inputs of two dtypes");
  const Shape &shape = y.shape();
  const Walk w = make_walk(ctx, shape, broadcast_strides(a.shape(), shape),
                           broadcast_strides(b.shape(), shape));
  check_launch(ctx, launch_compare(Code, element_type(ctx, a.dtype()), a.raw_data(), b.raw_data(),
                                   device_data<bool>(y), w, stream_of(ctx)));
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "cast", cast, DType::Float32, DType::Float16, DType::Int32,
                      DType::Int64, DType::Bool);
LUMEN_REGISTER_SUPPORTS("cuda", "cast", cast_limits, DType::Float32, DType::Float16, DType::Int32,
                        DType::Int64, DType::Bool);
LUMEN_REGISTER_KERNEL("cuda", "where", where, DType::Bool);

#define LUMEN_CUDA_COMPARE(op, code) \
  LUMEN_REGISTER_KERNEL("cuda", op, compare<code>, DType::Float32, DType::Int32, DType::Int64)
LUMEN_CUDA_COMPARE("equal", kEqual);
LUMEN_CUDA_COMPARE("less", kLess);
LUMEN_CUDA_COMPARE("greater", kGreater);
LUMEN_CUDA_COMPARE("less_equal", kLessEqual);
LUMEN_CUDA_COMPARE("greater_equal", kGreaterEqual);

}  // namespace lumen::cuda
