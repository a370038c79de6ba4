// CPU reductions for the dtypes the float32 kernels (reduce.cc) leave out: every reduction over
// float64 and the 8/16/32/64-bit integers (shape arithmetic: the product of dims, the smallest
// box count), min and max over bool, prod over float32. Any set of axes: each output element
// walks the input offsets of the reduced dims, precomputed once, in input order; the arithmetic
// is the reference's (integers in int64, saturated on store; mean, L2 and the logs in double), so
// the results are equal.
#include <cmath>
#include <limits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"
#include "core/scalar.h"
#include "graph/ops/reduce.h"

namespace lumen {
namespace {

enum class Kind { Sum, Prod, Min, Max, Mean, L1, L2, LogSum, LogSumExp, SumSquare };

template <class T, Kind K>
void reduce_typed(KernelContext &ctx) {
  constexpr bool kReal = std::is_floating_point_v<T> || K == Kind::Mean || K == Kind::L2 ||
                         K == Kind::LogSum || K == Kind::LogSumExp;
  // Integers: min and max in their own type (uint64's extremes do not fit int64), the rest in
  // 64 bits of their signedness.
  using Wide = std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>;
  using A = std::conditional_t<kReal, double,
                               std::conditional_t<K == Kind::Min || K == Kind::Max, T, Wide>>;
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
      if constexpr (K == Kind::Max || K == Kind::LogSumExp)
        acc = std::is_integral_v<T> ? A(std::numeric_limits<T>::lowest())
                                    : -std::numeric_limits<A>::infinity();
      for (int64_t off : reduced) {
        const A v = A(px[base + off]);
        if constexpr (K == Kind::Sum || K == Kind::Mean || K == Kind::LogSum) acc += v;
        if constexpr (K == Kind::Prod) acc *= v;
        if constexpr (K == Kind::Min)
          if (v < acc || v != v) acc = v;
        if constexpr (K == Kind::Max || K == Kind::LogSumExp)
          if (v > acc || v != v) acc = v;
        if constexpr (K == Kind::L1) acc += v < 0 ? -v : v;
        if constexpr (K == Kind::L2 || K == Kind::SumSquare) acc += v * v;
      }
      if constexpr (K == Kind::LogSumExp) {  // acc holds the maximum: the sum of exp(v - max)
        const A m = acc;
        A sum = 0;
        if (std::isfinite(m))
          for (int64_t off : reduced) sum += std::exp(A(px[base + off]) - m);
        acc = std::isfinite(m) ? m + std::log(sum) : m;
      }
      if constexpr (K == Kind::Mean)
        acc = count ? acc / double(count) : std::numeric_limits<double>::quiet_NaN();
      if constexpr (K == Kind::L2) acc = std::sqrt(acc);
      if constexpr (K == Kind::LogSum) acc = std::log(acc);
      py[o] = bin::convert<T>(acc);  // integers saturate (the log of a sum of 0 is -inf)
    }
  });
}

template <Kind K>
void reduce(KernelContext &ctx) {
  const DType dtype = ctx.input(0).dtype();
  if constexpr (K == Kind::Min || K == Kind::Max)
    if (dtype == DType::Bool) return reduce_typed<bool, K>(ctx);
  if (!scalar::visit_numeric(dtype, [&](auto tag) { reduce_typed<decltype(tag), K>(ctx); }))
    ctx.fail("no cpu kernel for ", dtype_name(dtype));
}

// float64 and the integers; the float32 kernels are in reduce.cc (prod's float32 one is here).
#define LUMEN_CPU_REDUCE(name, kind, ...)                                                      \
  LUMEN_REGISTER_KERNEL("cpu", name, reduce<kind>, __VA_ARGS__ DType::Float64, DType::Int8,    \
                        DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16, \
                        DType::UInt32, DType::UInt64)
LUMEN_CPU_REDUCE("reduce_sum", Kind::Sum);
LUMEN_CPU_REDUCE("reduce_prod", Kind::Prod, DType::Float32, );
LUMEN_CPU_REDUCE("reduce_min", Kind::Min, DType::Bool, );
LUMEN_CPU_REDUCE("reduce_max", Kind::Max, DType::Bool, );
LUMEN_CPU_REDUCE("reduce_mean", Kind::Mean);
LUMEN_CPU_REDUCE("reduce_l1", Kind::L1);
LUMEN_CPU_REDUCE("reduce_l2", Kind::L2);
LUMEN_CPU_REDUCE("reduce_log_sum", Kind::LogSum);
LUMEN_CPU_REDUCE("reduce_log_sum_exp", Kind::LogSumExp);
LUMEN_CPU_REDUCE("reduce_sum_square", Kind::SumSquare);

}  // namespace
}  // namespace lumen
