// CPU reductions for the dtypes the float32 kernels (reduce.cc) leave out: sum, prod, min and max
// over int32/int64 (shape arithmetic: the product of dims, the smallest box count) and float64,
// prod over float32, mean over float64. Any set of axes: each output element walks the input
// offsets of the reduced dims, precomputed once, in input order (so float64 sums equal the
// reference's); outputs are shared out over the pool.
#include <cmath>
#include <limits>
#include <vector>

#include "core/kernel.h"
#include "graph/ops/reduce.h"

namespace lumen {
namespace {

enum class Kind { Sum, Prod, Min, Max, Mean };

template <class T, Kind K>
void reduce_typed(KernelContext &ctx) {
  // Integers accumulate in int64 (wrapping like the reference's), floats in double.
  using A = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
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
  const std::vector<int64_t> stride = contiguous_strides(shape);
  std::vector<int64_t> kept_dims, kept_strides, reduced{0};
  for (size_t d = 0; d < rank; ++d) {
    if (!mask[d]) {
      kept_dims.push_back(shape[d]);
      kept_strides.push_back(stride[d]);
      continue;
    }
    std::vector<int64_t> next;  // offsets of the reduced dims so far, in input order
    next.reserve(reduced.size() * size_t(shape[d]));
    for (int64_t base : reduced)
      for (int64_t i = 0; i < shape[d]; ++i) next.push_back(base + i * stride[d]);
    reduced = std::move(next);
  }
  int64_t n_out = 1;
  for (int64_t d : kept_dims) n_out *= d;
  if (n_out != y.numel())
    ctx.fail("output ", y.shape().to_string(), " does not match the reduction of ",
             shape.to_string());
  const T *px = x.data<T>();
  T *py = y.data<T>();
  const auto count = static_cast<int64_t>(reduced.size());
  const int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, count));
  ctx.pool.parallel_for(n_out, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      int64_t rem = o, base = 0;
      for (size_t d = kept_dims.size(); d-- > 0;) {
        base += (rem % kept_dims[d]) * kept_strides[d];
        rem /= kept_dims[d];
      }
      A acc = K == Kind::Prod ? A(1) : A(0);
      if constexpr (K == Kind::Min)
        acc = std::is_integral_v<T> ? A(std::numeric_limits<T>::max())
                                    : std::numeric_limits<A>::infinity();
      if constexpr (K == Kind::Max)
        acc = std::is_integral_v<T> ? A(std::numeric_limits<T>::lowest())
                                    : -std::numeric_limits<A>::infinity();
      for (int64_t off : reduced) {
        const A v = A(px[base + off]);
        if constexpr (K == Kind::Sum || K == Kind::Mean) acc += v;
        if constexpr (K == Kind::Prod) acc *= v;
        if constexpr (K == Kind::Min)
          if (v < acc || v != v) acc = v;
        if constexpr (K == Kind::Max)
          if (v > acc || v != v) acc = v;
      }
      if constexpr (K == Kind::Mean)
        acc = count ? acc / double(count) : std::numeric_limits<double>::quiet_NaN();
      py[o] = T(acc);
    }
  });
}

template <Kind K>
void reduce(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return reduce_typed<float, K>(ctx);
    case DType::Float64:
      return reduce_typed<double, K>(ctx);
    case DType::Int32:
      return reduce_typed<int32_t, K>(ctx);
    case DType::Int64:
      return reduce_typed<int64_t, K>(ctx);
    default:
      ctx.fail("no cpu kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

#define LUMEN_INT_AND_F64 DType::Float64, DType::Int32, DType::Int64
LUMEN_REGISTER_KERNEL("cpu", "reduce_sum", reduce<Kind::Sum>, LUMEN_INT_AND_F64);
LUMEN_REGISTER_KERNEL("cpu", "reduce_prod", reduce<Kind::Prod>, DType::Float32, LUMEN_INT_AND_F64);
LUMEN_REGISTER_KERNEL("cpu", "reduce_min", reduce<Kind::Min>, LUMEN_INT_AND_F64);
LUMEN_REGISTER_KERNEL("cpu", "reduce_max", reduce<Kind::Max>, LUMEN_INT_AND_F64);
LUMEN_REGISTER_KERNEL("cpu", "reduce_mean", reduce<Kind::Mean>, DType::Float64);

}  // namespace
}  // namespace lumen
