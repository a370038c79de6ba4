// Reference matmul and gemm: one output element at a time, accumulated in double. Slow on purpose;
// these are what the optimized backends are tested against. Float16/BFloat16 are widened on load
// and rounded once from the double accumulator.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Offset of each operand's matrix for every output batch index, following NumPy broadcasting.
struct BatchOffsets {
  std::vector<int64_t> a, b;  // in matrices (multiply by m*k or k*n)
};

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

BatchOffsets batch_offsets(const Shape &a, const Shape &b) {
  const size_t ba = a.rank() > 2 ? a.rank() - 2 : 0, bb = b.rank() > 2 ? b.rank() - 2 : 0;
  const size_t rank = std::max(ba, bb);
  std::vector<int64_t> da(rank, 1), db(rank, 1), out(rank);
  for (size_t i = 0; i < ba; ++i) da[rank - ba + i] = a[i];
  for (size_t i = 0; i < bb; ++i) db[rank - bb + i] = b[i];
  int64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    out[i] = da[i] == 1 ? db[i] : da[i];
    count = checked_mul(count, out[i], "matmul batch count");
  }
  BatchOffsets offsets;
  for (int64_t t = 0; t < count; ++t) {
    // Decompose t into an index over `out` and recompose it over each operand's batch dims.
    int64_t rest = t, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % out[i];
      rest /= out[i];
      if (da[i] != 1) oa += idx * sa;
      if (db[i] != 1) ob += idx * sb;
      sa *= da[i];
      sb *= db[i];
    }
    offsets.a.push_back(oa);
    offsets.b.push_back(ob);
  }
  return offsets;
}

template <class T>
void matmul(KernelContext &ctx) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  const Shape &sa = ta.shape(), &sb = tb.shape();
  const int64_t m = sa.rank() >= 2 ? sa[sa.rank() - 2] : 1;
  const int64_t k = sa[sa.rank() - 1];
  const int64_t n = sb.rank() >= 2 ? sb[sb.rank() - 1] : 1;
  if (k != (sb.rank() >= 2 ? sb[sb.rank() - 2] : sb[0]))
    ctx.fail("inner dimensions do not match: ", sa.to_string(), " @ ", sb.to_string());
  const BatchOffsets offsets = batch_offsets(sa, sb);
  const T *a = ta.data<T>();
  const T *b = tb.data<T>();
  T *y = ctx.output(0).data<T>();
  for (size_t t = 0; t < offsets.a.size(); ++t) {
    const T *at = a + offsets.a[t] * m * k;
    const T *bt = b + offsets.b[t] * k * n;
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
