// CPU element-wise math (trigonometric, hyperbolic, rounding, reciprocal, softsign, mish, selu,
// celu, thresholded relu) with the formulas every backend shares (backends/common/math_functors.h),
// float32 and float64, split over the pool; abs/neg of integers (T5's relative-position buckets);
// sign and shrink of floats and integers. Rotary embeddings' sin/cos run here.
#include <cstdlib>

#include "backends/common/math_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 13;

template <class F, class T>
void unary_typed(KernelContext &ctx) {
  const F f(ctx.attrs);
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
  });
}

template <class F>
void unary(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return unary_typed<F, double>(ctx);
  unary_typed<F, float>(ctx);
}

struct IntAbs {
  explicit IntAbs(const Attributes &) {}
  template <class T>
  T operator()(T x) const {
    return x < 0 ? T(-x) : x;  // INT_MIN stays INT_MIN, as in two's complement everywhere
  }
};
struct IntNeg {
  explicit IntNeg(const Attributes &) {}
  template <class T>
  T operator()(T x) const {
    return T(-x);
  }
};

template <class F>
void integer_unary(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Int64) return unary_typed<F, int64_t>(ctx);
  unary_typed<F, int32_t>(ctx);
}

template <class F>
void numeric_unary(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
    case DType::Float64:
      return unary<F>(ctx);
    default:
      return integer_unary<F>(ctx);
  }
}

#define LUMEN_CPU_MATH(name, F) \
  LUMEN_REGISTER_KERNEL("cpu", name, unary<math::F>, DType::Float32, DType::Float64)
LUMEN_CPU_MATH("sin", Sin);
LUMEN_CPU_MATH("cos", Cos);
LUMEN_CPU_MATH("tan", Tan);
LUMEN_CPU_MATH("asin", Asin);
LUMEN_CPU_MATH("acos", Acos);
LUMEN_CPU_MATH("atan", Atan);
LUMEN_CPU_MATH("sinh", Sinh);
LUMEN_CPU_MATH("cosh", Cosh);
LUMEN_CPU_MATH("asinh", Asinh);
LUMEN_CPU_MATH("acosh", Acosh);
LUMEN_CPU_MATH("atanh", Atanh);
LUMEN_CPU_MATH("reciprocal", Reciprocal);
LUMEN_CPU_MATH("floor", Floor);
LUMEN_CPU_MATH("ceil", Ceil);
LUMEN_CPU_MATH("round", Round);
LUMEN_CPU_MATH("softsign", Softsign);
LUMEN_CPU_MATH("mish", Mish);
LUMEN_CPU_MATH("selu", Selu);
LUMEN_CPU_MATH("celu", Celu);
LUMEN_CPU_MATH("thresholded_relu", ThresholdedRelu);
LUMEN_REGISTER_KERNEL("cpu", "sign", numeric_unary<math::Sign>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("cpu", "shrink", numeric_unary<math::Shrink>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64);
struct BitNot {
  explicit BitNot(const Attributes &) {}
  template <class T>
  T operator()(T x) const {
    return T(~x);
  }
};

void bitwise_not(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Int8:
      return unary_typed<BitNot, int8_t>(ctx);
    case DType::UInt8:
      return unary_typed<BitNot, uint8_t>(ctx);
    case DType::Int16:
      return unary_typed<BitNot, int16_t>(ctx);
    case DType::UInt16:
      return unary_typed<BitNot, uint16_t>(ctx);
    case DType::Int32:
      return unary_typed<BitNot, int32_t>(ctx);
    case DType::UInt32:
      return unary_typed<BitNot, uint32_t>(ctx);
    case DType::Int64:
      return unary_typed<BitNot, int64_t>(ctx);
    default:
      return unary_typed<BitNot, uint64_t>(ctx);
  }
}

LUMEN_REGISTER_KERNEL("cpu", "bitwise_not", bitwise_not, DType::Int8, DType::Int16, DType::Int32,
                      DType::Int64, DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64);
LUMEN_REGISTER_KERNEL("cpu", "abs", integer_unary<IntAbs>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("cpu", "neg", integer_unary<IntNeg>, DType::Int32, DType::Int64);

}  // namespace
}  // namespace lumen
