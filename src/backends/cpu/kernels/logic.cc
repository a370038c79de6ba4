// CPU comparisons (equal, less, greater, less_equal, greater_equal) of the standard numeric dtypes
// and bool, and where of any element size: the broadcast collapsed into runs
// (backends/common/broadcast.h) and tight loops compiled for the best vector ISA, split over the
// pool by output ranges. Attention masks are built from these (where(mask == 0, -inf, scores));
// the reference kernels index every element through the broadcast, ~50x slower. Broadcasts the
// runs do not take (a where whose x and y both broadcast differently from the output, ranks above
// kMaxBroadcastRank) walk output rows with per-row offsets.
#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/broadcast.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 16;  // output elements per parallel chunk

// Calls f with a value of the element type for the standard numeric dtypes and bool; false for
// the rest (float16/bfloat16, which compare as floats, and the narrow types).
template <class F>
bool visit_values(DType dtype, F &&f) {
  switch (dtype) {
    case DType::Float32:
      return f(float{}), true;
    case DType::Float64:
      return f(double{}), true;
    case DType::Int8:
      return f(int8_t{}), true;
    case DType::Int16:
      return f(int16_t{}), true;
    case DType::Int32:
      return f(int32_t{}), true;
    case DType::Int64:
      return f(int64_t{}), true;
    case DType::UInt8:
      return f(uint8_t{}), true;
    case DType::UInt16:
      return f(uint16_t{}), true;
    case DType::UInt32:
      return f(uint32_t{}), true;
    case DType::UInt64:
      return f(uint64_t{}), true;
    case DType::Bool:
      return f(bool{}), true;
    default:
      return false;
  }
}

// Calls f with an unsigned type of the element's size (where only moves elements).
template <class F>
bool visit_bytes(DType dtype, F &&f) {
  switch (dtype_size(dtype)) {
    case 1:
      return f(uint8_t{}), true;
    case 2:
      return f(uint16_t{}), true;
    case 4:
      return f(uint32_t{}), true;
    case 8:
      return f(uint64_t{}), true;
    default:
      return false;
  }
}

template <class F, class T>
void compare_typed(KernelContext &ctx, const BroadcastLoop &runs) {
  const T *pa = ctx.input(0).data<T>(), *pb = ctx.input(1).data<T>();
  bool *py = ctx.output(0).data<bool>();
  const bool a_walks = runs.a_walks(), b_walks = runs.b_walks();
  const F f;
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      runs.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
        const T *a = pa + ao, *b = pb + bo;
        bool *y = py + yo;
        if (a_walks && b_walks)
          for (int64_t i = 0; i < len; ++i) y[i] = f(a[i], b[i]);
        else if (a_walks)
          for (int64_t i = 0; i < len; ++i) y[i] = f(a[i], *b);
        else if (b_walks)
          for (int64_t i = 0; i < len; ++i) y[i] = f(*a, b[i]);
        else
          for (int64_t i = 0; i < len; ++i) y[i] = f(*a, *b);
      });
    });
  });
}

// compare for broadcasts BroadcastLoop does not take (ranks above kMaxBroadcastRank).
template <class F, class T>
void compare_general(KernelContext &ctx) {
  const T *pa = ctx.input(0).data<T>(), *pb = ctx.input(1).data<T>();
  bool *py = ctx.output(0).data<bool>();
  const F f;
  for_each_broadcast_row<2>(ctx.pool, ctx.output(0).shape(),
                            {&ctx.input(0).shape(), &ctx.input(1).shape()},
                            [&](int64_t at, int64_t len, const std::array<int64_t, 2> &o,
                                const std::array<int64_t, 2> &s) {
                              for (int64_t i = 0; i < len; ++i)
                                py[at + i] = f(pa[o[0] + i * s[0]], pb[o[1] + i * s[1]]);
                            });
}

template <class F>
void compare(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  BroadcastLoop runs;
  if (ctx.output(0).numel() == 0) return;
  if (a.dtype() != b.dtype())
    ctx.fail("inputs differ in dtype: ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  const bool runs_fit = runs.init(a.shape(), b.shape(), ctx.output(0).shape());
  if (!visit_values(a.dtype(), [&](auto tag) {
        if (runs_fit)
          compare_typed<F, decltype(tag)>(ctx, runs);
        else
          compare_general<F, decltype(tag)>(ctx);
      }))
    ctx.fail("no CPU comparison of ", dtype_name(a.dtype()), " values");  // none is registered
}

// where(c, x, y) when one of x and y is a single element or has the other's shape: the broadcast
// of (c, v) for the other one, v, gives both offsets.
template <class T>
void where_typed(KernelContext &ctx, const BroadcastLoop &runs, bool v_is_x, bool other_scalar) {
  const bool *pc = ctx.input(0).data<bool>();
  // T is an unsigned type of the element's size: the tensors are read as bytes.
  const auto *pv = static_cast<const T *>(ctx.input(v_is_x ? 1 : 2).raw_data());
  const auto *po = static_cast<const T *>(ctx.input(v_is_x ? 2 : 1).raw_data());
  auto *py = static_cast<T *>(ctx.output(0).raw_data());
  const bool c_walks = runs.a_walks(), v_walks = runs.b_walks();
  ctx.pool.parallel_for(ctx.output(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      runs.for_range(begin, end, [&](int64_t yo, int64_t co, int64_t vo, int64_t len) {
        const bool *c = pc + co;
        const T *v = pv + vo, *o = other_scalar ? po : po + vo;
        T *y = py + yo;
        const int64_t cs = c_walks ? 1 : 0, vs = v_walks ? 1 : 0, os = other_scalar ? 0 : vs;
        for (int64_t i = 0; i < len; ++i) {
          const T xv = v_is_x ? v[i * vs] : o[i * os], yv = v_is_x ? o[i * os] : v[i * vs];
          y[i] = c[i * cs] ? xv : yv;
        }
      });
    });
  });
}

// Any broadcast of N inputs to `shape`, row by row (all dims but the last): each input's offset
// found once per row, then body(row, offsets, steps) walks the row, input k advancing steps[k]
// (0 or 1) per element. For ranks BroadcastLoop does not take and broadcasts it does not collapse.
template <size_t N, class Body>
void for_each_broadcast_row(ThreadPool &pool, const Shape &shape,
                            const std::array<const Shape *, N> &shapes, Body &&body) {
  const size_t rank = shape.rank();
  std::array<std::vector<int64_t>, N> strides;  // per output dim; 0 where input k broadcasts
  for (size_t k = 0; k < N; ++k) {
    const Shape &s = *shapes[k];
    strides[k].assign(rank, 0);
    int64_t stride = 1;
    for (size_t d = s.rank(); d-- > 0;) {
      if (s[d] != 1) strides[k][rank - s.rank() + d] = stride;
      stride *= s[d];
    }
  }
  const int64_t inner = rank ? shape[rank - 1] : 1, rows = shape.numel() / inner;
  std::array<int64_t, N> steps{};
  for (size_t k = 0; k < N; ++k) steps[k] = rank ? strides[k][rank - 1] : 0;
  pool.parallel_for(rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      std::array<int64_t, N> offset{};
      for (int64_t rem = row, d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
        const int64_t i = rem % shape[static_cast<size_t>(d)];
        rem /= shape[static_cast<size_t>(d)];
        for (size_t k = 0; k < N; ++k) offset[k] += i * strides[k][static_cast<size_t>(d)];
      }
      body(row * inner, inner, offset, steps);
    }
  });
}

// where(c, x, y) for any broadcast of the three.
template <class T>
void where_general(KernelContext &ctx) {
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  Tensor &out = ctx.output(0);
  const bool *pc = c.data<bool>();
  const auto *px = static_cast<const T *>(x.raw_data()), *py = static_cast<const T *>(y.raw_data());
  auto *po = static_cast<T *>(out.raw_data());
  for_each_broadcast_row<3>(ctx.pool, out.shape(), {&c.shape(), &x.shape(), &y.shape()},
                            [&](int64_t at, int64_t len, const std::array<int64_t, 3> &o,
                                const std::array<int64_t, 3> &s) {
                              const bool *cr = pc + o[0];
                              const T *xr = px + o[1], *yr = py + o[2];
                              for (int64_t i = 0; i < len; ++i)
                                po[at + i] = cr[i * s[0]] ? xr[i * s[1]] : yr[i * s[2]];
                            });
}

// Where's values move as bytes: the 16-byte elements (complex128) as this.
struct Bytes16 {
  uint64_t half[2];
};

void where(KernelContext &ctx) {
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  Tensor &out = ctx.output(0);
  if (out.numel() == 0) return;
  if (x.dtype() != y.dtype()) ctx.fail("x and y differ in dtype");
  if (x.dtype() == DType::String) return where_general<std::string>(ctx);  // assigned, not moved
  if (holds_objects(x.dtype()) || (dtype_size(x.dtype()) > 8 && dtype_size(x.dtype()) != 16))
    ctx.fail("cannot select ", dtype_name(x.dtype()), " values");
  // v: the input the loop walks with the condition; the other is a single element or v's shape.
  const bool y_follows = y.numel() == 1 || y.shape() == x.shape();
  const bool x_follows = x.numel() == 1;
  BroadcastLoop runs;
  const bool v_is_x = y_follows;
  const Tensor &v = v_is_x ? x : y;
  const bool other_scalar = v_is_x ? y.numel() == 1 : true;
  const bool fast = (y_follows || x_follows) && runs.init(c.shape(), v.shape(), out.shape());
  if (!visit_bytes(x.dtype(), [&](auto tag) {
        if (fast)
          where_typed<decltype(tag)>(ctx, runs, v_is_x, other_scalar);
        else
          where_general<decltype(tag)>(ctx);
      }))
    where_general<Bytes16>(ctx);  // checked above: complex128
}

#define LUMEN_CPU_COMPARE(name, F)                                                             \
  LUMEN_REGISTER_KERNEL("cpu", name, compare<F>, DType::Float32, DType::Float64, DType::Int8,  \
                        DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16, \
                        DType::UInt32, DType::UInt64, DType::Bool)
LUMEN_CPU_COMPARE("equal", bin::Equal);
LUMEN_CPU_COMPARE("less", bin::Less);
LUMEN_CPU_COMPARE("greater", bin::Greater);
LUMEN_CPU_COMPARE("less_equal", bin::LessEqual);
LUMEN_CPU_COMPARE("greater_equal", bin::GreaterEqual);
// Dispatched on the condition's dtype, like the reference kernel.
LUMEN_REGISTER_KERNEL("cpu", "where", where, DType::Bool);

}  // namespace
}  // namespace lumen
