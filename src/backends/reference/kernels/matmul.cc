// Reference matmul and gemm: one output element at a time, accumulated in double. Slow on purpose;
// these are what the optimized backends are tested against. Float16/BFloat16 are widened on load
// and rounded once from the double accumulator.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/matmul_plan.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Offset of each operand's matrix for every output batch index, following NumPy broadcasting.
template <class T>
double widen(T v) {
  return static_cast<double>(bin::load(v));
}
template <class T>
T narrow(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return bin::convert<T>(v);
  else
    return static_cast<T>(v);
}

template <class T>
void matmul(KernelContext &ctx) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  const MatmulPlan plan = plan_matmul(ctx, ta.shape(), tb.shape());
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  const T *a = ta.data<T>();
  const T *b = tb.data<T>();
  T *y = ctx.output(0).data<T>();
  for (size_t t = 0; t < plan.a.size(); ++t) {
    const T *at = a + plan.a[t] * m * k;
    const T *bt = b + plan.b[t] * k * n;
    T *yt = y + static_cast<int64_t>(t) * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += widen(at[i * k + p]) * widen(bt[p * n + j]);
        yt[i * n + j] = narrow<T>(acc);
      }
  }
}

template <class T>
void gemm(KernelContext &ctx) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  const bool trans_a = ctx.attrs.get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs.get_int("transB", 0) != 0;
  const double alpha = ctx.attrs.get_float("alpha", 1.0);
  const double beta = ctx.attrs.get_float("beta", 1.0);
  const int64_t m = ctx.output(0).shape()[0], n = ctx.output(0).shape()[1];
  const int64_t k = trans_a ? ta.shape()[0] : ta.shape()[1];
  const T *a = ta.data<T>();
  const T *b = tb.data<T>();
  T *y = ctx.output(0).data<T>();
  // A(i, p) and B(p, j) of the un-transposed product.
  auto a_at = [&](int64_t i, int64_t p) { return trans_a ? a[p * m + i] : a[i * k + p]; };
  auto b_at = [&](int64_t p, int64_t j) { return trans_b ? b[j * k + p] : b[p * n + j]; };
  const Tensor *tc = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += widen(a_at(i, p)) * widen(b_at(p, j));
      double value = alpha * acc;
      if (tc) {
        // C broadcasts to [m, n] from [], [n], [1], [m, 1], [1, n] or [m, n].
        const Shape &sc = tc->shape();
        int64_t index = 0;
        if (sc.rank() == 1) index = sc[0] == 1 ? 0 : j;
        if (sc.rank() == 2) index = (sc[0] == 1 ? 0 : i) * sc[1] + (sc[1] == 1 ? 0 : j);
        value += beta * widen(tc->data<T>()[index]);
      }
      y[i * n + j] = narrow<T>(value);
    }
}

LUMEN_REGISTER_KERNEL("reference", "matmul", matmul<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "matmul", matmul<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "gemm", gemm<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "gemm", gemm<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "matmul", matmul<Float16>, DType::Float16);
LUMEN_REGISTER_KERNEL("reference", "matmul", matmul<BFloat16>, DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "gemm", gemm<Float16>, DType::Float16);
LUMEN_REGISTER_KERNEL("reference", "gemm", gemm<BFloat16>, DType::BFloat16);

}  // namespace
}  // namespace lumen
