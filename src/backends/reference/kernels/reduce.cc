// Reference reductions (reduce_*), argmax/argmin, top_k, cumsum/cumprod, hardmax and einsum:
// plain loops over unravelled indices, accumulating floats in double. The ground truth for the
// optimized kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/einsum_labels.h"
#include "backends/common/einsum_loops.h"
#include "core/kernel.h"
#include "graph/ops/reduce.h"

namespace lumen {
namespace {

size_t kernel_axis(const KernelContext &ctx, int64_t axis, const Shape &shape) {
  const auto r = static_cast<int64_t>(shape.rank());
  if (axis < -r || axis >= r)
    ctx.fail("axis ", axis, " is out of range for input ", shape.to_string());
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// The input viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView view_around(const Shape &shape, size_t axis) {
  AxisView v;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (d < axis) v.outer *= shape[d];
    if (d == axis) v.n = shape[d];
    if (d > axis) v.inner *= shape[d];
  }
  return v;
}

// ---- reduce_* -------------------------------------------------------------------------------

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Kind K, class T>
void reduce_typed(KernelContext &ctx) {
  // Float16/BFloat16 are loaded into double and rounded once on store.
  constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
  constexpr bool kReal = std::is_floating_point_v<T> || kHalf || K == Kind::Mean || K == Kind::L2 ||
                         K == Kind::LogSum || K == Kind::LogSumExp;
  using A = std::conditional_t<kReal, double, int64_t>;
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const Shape &shape = x.shape();
  const size_t rank = shape.rank();
  const std::vector<int64_t> axes =
      ctx.has_input(1) ? ctx.input_ints(1, "axes") : ctx.attrs.get_ints("axes", {});
  std::vector<bool> mask;
  try {
    mask =
        reduce_detail::reduce_mask(axes, rank, ctx.attrs.get_int("noop_with_empty_axes", 0) != 0);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  // Output offset of an input index: strides over the kept dims only.
  std::vector<int64_t> out_stride(rank, 0);
  int64_t n_out = 1, count = 1;
  for (size_t d = rank; d-- > 0;) {
    if (mask[d]) {
      count *= shape[d];
    } else {
      out_stride[d] = n_out;
      n_out *= shape[d];
    }
  }
  if (n_out != y.numel())
    ctx.fail("output ", y.shape().to_string(), " does not match the reduction of ",
             shape.to_string());
  A init = 0;
  if constexpr (K == Kind::Prod) init = 1;
  if constexpr (K == Kind::Max || K == Kind::LogSumExp) {
    if constexpr (std::is_floating_point_v<A>)
      init = -std::numeric_limits<A>::infinity();
    else
      init = static_cast<A>(std::numeric_limits<T>::lowest());
  }
  if constexpr (K == Kind::Min) {
    if constexpr (std::is_floating_point_v<A>)
      init = std::numeric_limits<A>::infinity();
    else
      init = static_cast<A>(std::numeric_limits<T>::max());
  }
  std::vector<A> acc(static_cast<size_t>(n_out), init);
  const T *px = x.data<T>();
  std::vector<int64_t> index(rank, 0);
  auto for_each = [&](auto &&f) {
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      int64_t rem = i, o = 0;
      for (size_t d = rank; d-- > 0;) {
        o += (rem % shape[d]) * out_stride[d];
        rem /= shape[d];
      }
      f(acc[static_cast<size_t>(o)], static_cast<A>(bin::load(px[i])), o);
    }
  };
  std::vector<A> maxima;
  if constexpr (K == Kind::LogSumExp) {
    for_each([](A &a, A v, int64_t) {
      if (v > a || v != v) a = v;
    });
    maxima = acc;
    std::fill(acc.begin(), acc.end(), A(0));
  }
  for_each([&](A &a, A v, int64_t o) {
    if constexpr (K == Kind::Sum || K == Kind::Mean || K == Kind::LogSum) a += v;
    if constexpr (K == Kind::Prod) a *= v;
    if constexpr (K == Kind::Max)
      if (v > a || v != v) a = v;
    if constexpr (K == Kind::Min)
      if (v < a || v != v) a = v;
    if constexpr (K == Kind::L1) a += v < 0 ? -v : v;
    if constexpr (K == Kind::L2 || K == Kind::SumSquare) a += v * v;
    if constexpr (K == Kind::LogSumExp) {
      const A m = maxima[static_cast<size_t>(o)];
      if (std::isfinite(m)) a += std::exp(v - m);
    }
  });
  T *py = y.data<T>();
  for (int64_t o = 0; o < n_out; ++o) {
    A a = acc[static_cast<size_t>(o)];
    if constexpr (K == Kind::Mean) {
      if (count == 0)
        a = std::numeric_limits<double>::quiet_NaN();
      else
        a /= static_cast<double>(count);
    }
    if constexpr (K == Kind::L2) a = std::sqrt(a);
    if constexpr (K == Kind::LogSum) a = std::log(a);
    if constexpr (K == Kind::LogSumExp) {
      const A m = maxima[static_cast<size_t>(o)];
      a = std::isfinite(m) ? m + std::log(a) : m;
    }
    // Rounded once for halves; saturated for integers (the log of an integer sum of 0 is -inf,
    // which has no integer value: a fuzzed int64 ReduceLogSum reached it).
    py[o] = bin::convert<T>(a);
  }
}

template <Kind K>
void reduce(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return reduce_typed<K, float>(ctx);
    case DType::Float64:
      return reduce_typed<K, double>(ctx);
    case DType::Int32:
      return reduce_typed<K, int32_t>(ctx);
    case DType::Int64:
      return reduce_typed<K, int64_t>(ctx);
    case DType::Int8:
      return reduce_typed<K, int8_t>(ctx);
    case DType::UInt8:
      return reduce_typed<K, uint8_t>(ctx);
    case DType::Float16:
      return reduce_typed<K, Float16>(ctx);
    case DType::BFloat16:
      return reduce_typed<K, BFloat16>(ctx);
    case DType::Bool:
      if constexpr (K == Kind::Max || K == Kind::Min) return reduce_typed<K, bool>(ctx);
      break;
    default:
      break;
  }
  ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
}

#define LUMEN_REF_REDUCE(name, kind)                                                           \
  LUMEN_REGISTER_KERNEL("reference", name, reduce<kind>, DType::Float32, DType::Float64,       \
                        DType::Int32, DType::Int64, DType::Int8, DType::UInt8, DType::Float16, \
                        DType::BFloat16)
LUMEN_REF_REDUCE("reduce_sum", Kind::Sum);
LUMEN_REF_REDUCE("reduce_mean", Kind::Mean);
LUMEN_REF_REDUCE("reduce_prod", Kind::Prod);
LUMEN_REF_REDUCE("reduce_l1", Kind::L1);
LUMEN_REF_REDUCE("reduce_l2", Kind::L2);
LUMEN_REF_REDUCE("reduce_log_sum", Kind::LogSum);
LUMEN_REF_REDUCE("reduce_log_sum_exp", Kind::LogSumExp);
LUMEN_REF_REDUCE("reduce_sum_square", Kind::SumSquare);
LUMEN_REGISTER_KERNEL("reference", "reduce_max", reduce<Kind::Max>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64, DType::Int8, DType::UInt8, DType::Bool,
                      DType::Float16, DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "reduce_min", reduce<Kind::Min>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64, DType::Int8, DType::UInt8, DType::Bool,
                      DType::Float16, DType::BFloat16);

// ---- argmax / argmin --------------------------------------------------------------------------

template <bool kMax, class T>
void arg_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", 0), x.shape());
  const bool last = ctx.attrs.get_int("select_last_index", 0) != 0;
  const AxisView v = view_around(x.shape(), axis);
  if (v.n == 0) ctx.fail("cannot take the arg over the empty axis ", axis);
  const T *px = x.data<T>();
  int64_t *py = ctx.output(0).data<int64_t>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const T *row = px + o * v.n * v.inner + in;
      int64_t best = 0;
      for (int64_t j = 1; j < v.n; ++j) {
        const T cur = row[j * v.inner], top = row[best * v.inner];
        const bool better = kMax ? cur > top : cur < top;
        if (better || (last && cur == top)) best = j;
      }
      py[o * v.inner + in] = best;
    }
}

template <bool kMax>
void arg(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return arg_typed<kMax, float>(ctx);
    case DType::Float64:
      return arg_typed<kMax, double>(ctx);
    case DType::Int32:
      return arg_typed<kMax, int32_t>(ctx);
    case DType::Int64:
      return arg_typed<kMax, int64_t>(ctx);
    case DType::Int8:
      return arg_typed<kMax, int8_t>(ctx);
    case DType::UInt8:
      return arg_typed<kMax, uint8_t>(ctx);
    default:
      ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

#define LUMEN_REF_NUMERIC \
  DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Int8, DType::UInt8
LUMEN_REGISTER_KERNEL("reference", "argmax", arg<true>, LUMEN_REF_NUMERIC);
LUMEN_REGISTER_KERNEL("reference", "argmin", arg<false>, LUMEN_REF_NUMERIC);

// ---- top_k ------------------------------------------------------------------------------------

// Ties keep the lower index first (a stable sort of the indices in order), as ONNX asks.
template <class T>
void top_k_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", -1), x.shape());
  const std::vector<int64_t> kv = ctx.input_ints(1, "k");
  if (kv.size() != 1) ctx.fail("k must hold exactly one value, got ", kv.size());
  const AxisView v = view_around(x.shape(), axis);
  const int64_t k = kv[0];
  if (k < 0 || k > v.n) ctx.fail("k = ", k, " is out of range for input ", x.shape().to_string());
  if (ctx.output(0).shape()[axis] != k || ctx.output(1).shape()[axis] != k)
    ctx.fail("outputs do not have k = ", k, " elements along axis ", axis);
  const bool largest = ctx.attrs.get_int("largest", 1) != 0;
  const T *px = x.data<T>();
  T *pv = ctx.output(0).data<T>();
  int64_t *pi = ctx.output(1).data<int64_t>();
  std::vector<int64_t> order(static_cast<size_t>(v.n));
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const T *row = px + o * v.n * v.inner + in;
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? row[a * v.inner] > row[b * v.inner] : row[a * v.inner] < row[b * v.inner];
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * v.inner + in;
        pv[at] = row[order[static_cast<size_t>(j)] * v.inner];
        pi[at] = order[static_cast<size_t>(j)];
      }
    }
}

void top_k(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return top_k_typed<float>(ctx);
    case DType::Float64:
      return top_k_typed<double>(ctx);
    case DType::Int32:
      return top_k_typed<int32_t>(ctx);
    case DType::Int64:
      return top_k_typed<int64_t>(ctx);
    case DType::Int8:
      return top_k_typed<int8_t>(ctx);
    case DType::UInt8:
      return top_k_typed<uint8_t>(ctx);
    case DType::Int16:
      return top_k_typed<int16_t>(ctx);
    case DType::UInt16:
      return top_k_typed<uint16_t>(ctx);
    case DType::UInt32:
      return top_k_typed<uint32_t>(ctx);
    case DType::UInt64:
      return top_k_typed<uint64_t>(ctx);
    default:
      ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}
LUMEN_REGISTER_KERNEL("reference", "top_k", top_k, LUMEN_REF_NUMERIC, DType::Int16, DType::UInt16,
                      DType::UInt32, DType::UInt64);

// ---- cumsum / cumprod -------------------------------------------------------------------------

template <bool kProd, class T>
void cumulative_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const std::vector<int64_t> axis_v = ctx.input_ints(1, "axis");
  if (axis_v.size() != 1) ctx.fail("axis must hold exactly one value, got ", axis_v.size());
  const AxisView v = view_around(x.shape(), kernel_axis(ctx, axis_v[0], x.shape()));
  const bool exclusive = ctx.attrs.get_int("exclusive", 0) != 0;
  const bool reverse = ctx.attrs.get_int("reverse", 0) != 0;
  const T *px = x.data<T>();
  T *py = ctx.output(0).data<T>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      T acc = kProd ? T(1) : T(0);
      for (int64_t s = 0; s < v.n; ++s) {
        const int64_t j = reverse ? v.n - 1 - s : s;
        const int64_t at = (o * v.n + j) * v.inner + in;
        const T cur = px[at];
        if (!exclusive) acc = kProd ? T(acc * cur) : T(acc + cur);
        py[at] = acc;
        if (exclusive) acc = kProd ? T(acc * cur) : T(acc + cur);
      }
    }
}

template <bool kProd>
void cumulative(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return cumulative_typed<kProd, float>(ctx);
    case DType::Float64:
      return cumulative_typed<kProd, double>(ctx);
    case DType::Int32:
      return cumulative_typed<kProd, int32_t>(ctx);
    case DType::Int64:
      return cumulative_typed<kProd, int64_t>(ctx);
    default:
      ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}
LUMEN_REGISTER_KERNEL("reference", "cumsum", cumulative<false>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("reference", "cumprod", cumulative<true>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64);

// ---- hardmax ----------------------------------------------------------------------------------

// 1 at the first maximum along the axis, 0 elsewhere. With coerce_2d (ONNX before opset 13) the
// dims from the axis on form one row.
template <class T>
void hardmax_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const size_t axis = kernel_axis(ctx, ctx.attrs.get_int("axis", -1), x.shape());
  AxisView v = view_around(x.shape(), axis);
  if (ctx.attrs.get_int("coerce_2d", 0) != 0) {
    v.n *= v.inner;
    v.inner = 1;
  }
  const T *px = x.data<T>();
  T *py = ctx.output(0).data<T>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const int64_t base = o * v.n * v.inner + in;
      int64_t best = 0;
      for (int64_t j = 0; j < v.n; ++j) {
        if (px[base + j * v.inner] > px[base + best * v.inner]) best = j;
      }
      for (int64_t j = 0; j < v.n; ++j) py[base + j * v.inner] = T(j == best ? 1 : 0);
    }
}

void hardmax(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return hardmax_typed<float>(ctx);
    case DType::Float64:
      return hardmax_typed<double>(ctx);
    default:
      ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}
LUMEN_REGISTER_KERNEL("reference", "hardmax", hardmax, DType::Float32, DType::Float64);

// ---- einsum -----------------------------------------------------------------------------------

using einsum_loops::einsum_typed;

void einsum(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return einsum_typed<float>(ctx);
    case DType::Float64:
      return einsum_typed<double>(ctx);
    case DType::Int32:
      return einsum_typed<int32_t>(ctx);
    case DType::Int64:
      return einsum_typed<int64_t>(ctx);
    case DType::Float16:
      return einsum_typed<Float16>(ctx);
    case DType::BFloat16:
      return einsum_typed<BFloat16>(ctx);
    default:
      ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}
LUMEN_REGISTER_KERNEL("reference", "einsum", einsum, DType::Float32, DType::Float64, DType::Int32,
                      DType::Int64, DType::Float16, DType::BFloat16);

}  // namespace
}  // namespace lumen
