// CPU top_k along any axis: per row, the k best indices by a partial sort when k is small next to
// the row, a full sort otherwise; ties keep the lower index first, as ONNX asks (and NaN counts as
// larger than every number, so a NaN never breaks the ordering). Rows are shared out over the pool.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/kernel.h"
#include "core/scalar.h"

namespace lumen {
namespace {

template <class T>
bool before(T a, T b, int64_t ia, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na != nb ? (largest ? na : nb) : ia < ib;
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

template <class T>
void top_k_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.attrs.get_int("axis", -1);
  if (axis < -rank || axis >= rank)
    ctx.fail("axis ", axis, " is out of range for input ", x.shape().to_string());
  if (axis < 0) axis += rank;
  const std::vector<int64_t> kv = ctx.input_ints(1, "k");
  if (kv.size() != 1) ctx.fail("k must hold exactly one value, got ", kv.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= d == axis ? 1 : x.shape()[size_t(d)];
  const int64_t n = x.shape()[size_t(axis)], k = kv[0];
  if (k < 0 || k > n) ctx.fail("k = ", k, " is out of range for input ", x.shape().to_string());
  if (ctx.output(0).shape()[size_t(axis)] != k || ctx.output(1).shape()[size_t(axis)] != k)
    ctx.fail("outputs do not have k = ", k, " elements along axis ", axis);
  const bool largest = ctx.attrs.get_int("largest", 1) != 0;
  const T *px = x.data<T>();
  T *pv = ctx.output(0).data<T>();
  int64_t *pi = ctx.output(1).data<int64_t>();
  const int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, n));
  ctx.pool.parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::vector<T> row(static_cast<size_t>(n));
    for (int64_t job = begin; job < end; ++job) {
      const int64_t o = job / inner, in = job % inner;
      const T *src = px + o * n * inner + in;
      for (int64_t j = 0; j < n; ++j) row[size_t(j)] = src[j * inner];
      std::iota(order.begin(), order.end(), int64_t{0});
      auto cmp = [&](int64_t a, int64_t b) {
        return before(row[size_t(a)], row[size_t(b)], a, b, largest);
      };
      if (k * 4 < n)
        std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
      else
        std::sort(order.begin(), order.end(), cmp);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * inner + in;
        pv[at] = row[size_t(order[size_t(j)])];
        pi[at] = order[size_t(j)];
      }
    }
  });
}

void top_k(KernelContext &ctx) {
  const DType dtype = ctx.input(0).dtype();
  if (!scalar::visit_numeric(dtype, [&](auto tag) { top_k_typed<decltype(tag)>(ctx); }))
    ctx.fail("no cpu kernel for ", dtype_name(dtype));
}

LUMEN_REGISTER_KERNEL("cpu", "top_k", top_k, DType::Float32, DType::Float64, DType::Int8,
                      DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16,
                      DType::UInt32, DType::UInt64);

}  // namespace
}  // namespace lumen
