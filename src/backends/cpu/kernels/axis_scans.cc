// CPU ops that walk one axis of their input: argmax/argmin, cumsum/cumprod, hardmax and lp_norm
// (LpNormalization), for the dtypes the reference covers. The input is viewed as [outer, n, inner]
// around the axis. When inner > 1 a task takes a chunk of up to kColumns neighbouring columns and
// steps along the axis one contiguous row of the chunk at a time, so each step is a vectorizable
// loop over columns; when inner is 1 (the axis is innermost: a classifier's argmax, an embedding's
// norm) argmax/argmin run kLanes interleaved candidates over the row, combined at the end, and
// lp_norm sums in kLanes lanes. Tasks are shared out over the pool. The semantics are the
// reference's (backends/reference/kernels/reduce.cc, norms.cc): argmax and hardmax take the first
// extreme (the last with select_last_index), a NaN never wins unless it is the first element, and
// cumulative ops accumulate in the input dtype.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kColumns = 256;    // columns per task when the axis is not innermost
constexpr int64_t kLanes = 16;       // interleaved candidates along an innermost axis
constexpr int64_t kGrain = 1 << 14;  // elements of work per parallel task, roughly

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView view_around(const KernelContext &ctx, const Shape &shape, int64_t axis) {
  const auto rank = static_cast<int64_t>(shape.rank());
  if (axis < -rank || axis >= rank)
    ctx.fail("axis ", axis, " is out of range for input ", shape.to_string());
  if (axis < 0) axis += rank;
  AxisView v;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) v.outer *= shape[static_cast<size_t>(d)];
    if (d == axis) v.n = shape[static_cast<size_t>(d)];
    if (d > axis) v.inner *= shape[static_cast<size_t>(d)];
  }
  return v;
}

// Calls body(o, c0, c1) for every outer index o and chunk [c0, c1) of columns, in parallel.
template <class Body>
void for_each_chunk(ThreadPool &pool, const AxisView &v, const Body &body) {
  const int64_t chunks = (v.inner + kColumns - 1) / kColumns;
  const int64_t work = std::max<int64_t>(1, v.n * std::min(v.inner, kColumns));
  pool.parallel_for(v.outer * chunks, std::max<int64_t>(1, kGrain / work),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t t = begin; t < end; ++t) {
                        const int64_t c0 = (t % chunks) * kColumns;
                        body(t / chunks, c0, std::min(v.inner, c0 + kColumns));
                      }
                    });
}

// ---- argmax / argmin / hardmax ----------------------------------------------------------------

template <bool kMax, class T>
LUMEN_VEC_INLINE inline bool better(T cur, T best, bool last) {
  return (kMax ? cur > best : cur < best) || (last && cur == best);
}

// The index of the extreme of the contiguous row x[0, n), n >= 1.
template <bool kMax, class T>
int64_t row_extreme(const T *x, int64_t n, bool last) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x[0])) return 0;  // nothing compares better than a leading NaN
  T best[kLanes];
  int64_t index[kLanes];
  std::fill_n(best, kLanes, x[0]);
  std::fill_n(index, kLanes, int64_t{0});
  const int64_t body = n - n % kLanes;
  vec::run_best([&]() LUMEN_VEC_INLINE {
    for (int64_t j = 0; j < body; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) {
        const bool b = better<kMax>(x[j + l], best[l], last);
        best[l] = b ? x[j + l] : best[l];
        index[l] = b ? j + l : index[l];
      }
  });
  // Lane l holds the extreme of the indices = l (mod kLanes), and the first (last) of its ties.
  int64_t at = index[0];
  T value = best[0];
  for (int64_t l = 1; l < kLanes; ++l)
    if (better<kMax>(best[l], value, false) ||
        (best[l] == value && (last ? index[l] > at : index[l] < at))) {
      value = best[l];
      at = index[l];
    }
  for (int64_t j = body; j < n; ++j)
    if (better<kMax>(x[j], value, last)) {
      value = x[j];
      at = j;
    }
  return at;
}

// out[o * inner + c] = the index along the axis of the extreme of column c of outer block o.
template <bool kMax, class T>
void arg_indices(ThreadPool &pool, const T *x, const AxisView &v, bool last, int64_t *out) {
  if (v.inner == 1) {
    pool.parallel_for(v.outer, std::max<int64_t>(1, kGrain / v.n), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) out[o] = row_extreme<kMax>(x + o * v.n, v.n, last);
    });
    return;
  }
  for_each_chunk(pool, v, [&](int64_t o, int64_t c0, int64_t c1) {
    const T *block = x + o * v.n * v.inner;
    T best[kColumns];
    int64_t *index = out + o * v.inner + c0;
    const int64_t w = c1 - c0;
    std::copy_n(block + c0, w, best);
    std::fill_n(index, w, int64_t{0});
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t j = 1; j < v.n; ++j) {
        const T *row = block + j * v.inner + c0;
        for (int64_t c = 0; c < w; ++c) {
          const bool b = better<kMax>(row[c], best[c], last);
          best[c] = b ? row[c] : best[c];
          index[c] = b ? j : index[c];
        }
      }
    });
  });
}

template <class Fn>
bool visit_arg_dtype(DType dtype, Fn &&fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(float{}), true;
    case DType::Float64:
      return fn(double{}), true;
    case DType::Int32:
      return fn(int32_t{}), true;
    case DType::Int64:
      return fn(int64_t{}), true;
    case DType::Int8:
      return fn(int8_t{}), true;
    case DType::UInt8:
      return fn(uint8_t{}), true;
    default:
      return false;
  }
}

template <bool kMax>
void arg(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const AxisView v = view_around(ctx, x.shape(), ctx.attrs.get_int("axis", 0));
  if (v.n == 0) ctx.fail("cannot take the arg over the empty axis of ", x.shape().to_string());
  const bool last = ctx.attrs.get_int("select_last_index", 0) != 0;
  if (!visit_arg_dtype(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        arg_indices<kMax>(ctx.pool, x.data<T>(), v, last, ctx.output(0).data<int64_t>());
      }))
    ctx.fail("no cpu kernel for ", dtype_name(x.dtype()));
}

// 1 at the first maximum along the axis, 0 elsewhere; with coerce_2d (before opset 13) the dims
// from the axis on form one row.
template <class T>
void hardmax_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  AxisView v = view_around(ctx, x.shape(), ctx.attrs.get_int("axis", -1));
  if (ctx.attrs.get_int("coerce_2d", 0) != 0) {
    v.n *= v.inner;
    v.inner = 1;
  }
  T *y = ctx.output(0).data<T>();
  std::fill_n(y, ctx.output(0).numel(), T(0));
  if (v.n == 0) return;
  std::vector<int64_t> index(static_cast<size_t>(v.outer * v.inner));
  arg_indices<true>(ctx.pool, x.data<T>(), v, false, index.data());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t c = 0; c < v.inner; ++c)
      y[(o * v.n + index[static_cast<size_t>(o * v.inner + c)]) * v.inner + c] = T(1);
}

void hardmax(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return hardmax_typed<double>(ctx);
  hardmax_typed<float>(ctx);
}

// ---- cumsum / cumprod -------------------------------------------------------------------------

template <class F, class T>
void cumulative_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const std::vector<int64_t> axis = ctx.input_ints(1, "axis");
  if (axis.size() != 1) ctx.fail("axis must hold exactly one value, got ", axis.size());
  const AxisView v = view_around(ctx, x.shape(), axis[0]);
  const bool exclusive = ctx.attrs.get_int("exclusive", 0) != 0;
  const bool reverse = ctx.attrs.get_int("reverse", 0) != 0;
  const T identity = std::is_same_v<F, bin::Mul> ? T(1) : T(0);
  const F f;
  const T *px = x.data<T>();
  T *py = ctx.output(0).data<T>();
  for_each_chunk(ctx.pool, v, [&](int64_t o, int64_t c0, int64_t c1) {
    T acc[kColumns];
    const int64_t w = c1 - c0;
    std::fill_n(acc, w, identity);
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t s = 0; s < v.n; ++s) {
        const int64_t at = (o * v.n + (reverse ? v.n - 1 - s : s)) * v.inner + c0;
        const T *in = px + at;
        T *out = py + at;
        // Exclusive: the running value before this row (in and out may be the same memory).
        for (int64_t c = 0; c < w; ++c) {
          const T cur = in[c], next = f(acc[c], cur);
          out[c] = exclusive ? acc[c] : next;
          acc[c] = next;
        }
      }
    });
  });
}

template <class F>
void cumulative(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return cumulative_typed<F, float>(ctx);
    case DType::Float64:
      return cumulative_typed<F, double>(ctx);
    case DType::Int32:
      return cumulative_typed<F, int32_t>(ctx);
    case DType::Int64:
      return cumulative_typed<F, int64_t>(ctx);
    default:
      ctx.fail("no cpu kernel for ", dtype_name(ctx.input(0).dtype()));
  }
}

// ---- lp_norm ----------------------------------------------------------------------------------

// x / ||x||_p along the axis (p 1 or 2; a zero norm gives 0), the norm accumulated in double.
template <class T>
void lp_norm_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const AxisView v = view_around(ctx, x.shape(), ctx.attrs.get_int("axis", -1));
  const int64_t p = ctx.attrs.get_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got ", p);
  const T *px = x.data<T>();
  T *py = ctx.output(0).data<T>();
  if (v.inner == 1) {  // contiguous rows: the sum in kLanes independent double lanes
    ctx.pool.parallel_for(v.outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, v.n)),
                          [&](int64_t o0, int64_t o1) {
                            for (int64_t o = o0; o < o1; ++o) {
                              const T *row = px + o * v.n;
                              double lanes[kLanes] = {};
                              const int64_t body = v.n - v.n % kLanes;
                              vec::run_best([&]() LUMEN_VEC_INLINE {
                                for (int64_t j = 0; j < body; j += kLanes)
                                  for (int64_t l = 0; l < kLanes; ++l) {
                                    const double e = double(row[j + l]);
                                    lanes[l] += p == 1 ? (e < 0 ? -e : e) : e * e;
                                  }
                              });
                              double norm = 0;
                              for (double lane : lanes) norm += lane;
                              for (int64_t j = body; j < v.n; ++j)
                                norm += p == 1 ? std::abs(double(row[j]))
                                               : double(row[j]) * double(row[j]);
                              if (p == 2) norm = std::sqrt(norm);
                              T *out = py + o * v.n;
                              const double inv = norm == 0 ? 0.0 : 1.0 / norm;
                              for (int64_t j = 0; j < v.n; ++j)
                                out[j] = norm == 0 ? T(0) : T(double(row[j]) * inv);
                            }
                          });
    return;
  }
  for_each_chunk(ctx.pool, v, [&](int64_t o, int64_t c0, int64_t c1) {
    double norm[kColumns] = {};
    const int64_t w = c1 - c0;
    const T *block = px + o * v.n * v.inner + c0;
    for (int64_t j = 0; j < v.n; ++j)
      for (int64_t c = 0; c < w; ++c) {
        const double e = double(block[j * v.inner + c]);
        norm[c] += p == 1 ? std::abs(e) : e * e;
      }
    for (int64_t c = 0; c < w; ++c) norm[c] = p == 2 ? std::sqrt(norm[c]) : norm[c];
    T *out = py + o * v.n * v.inner + c0;
    for (int64_t j = 0; j < v.n; ++j)
      for (int64_t c = 0; c < w; ++c)
        out[j * v.inner + c] = norm[c] == 0 ? T(0) : T(double(block[j * v.inner + c]) / norm[c]);
  });
}

void lp_norm(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return lp_norm_typed<double>(ctx);
  lp_norm_typed<float>(ctx);
}

#define LUMEN_ARG_DTYPES \
  DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Int8, DType::UInt8
LUMEN_REGISTER_KERNEL("cpu", "argmax", arg<true>, LUMEN_ARG_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "argmin", arg<false>, LUMEN_ARG_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "hardmax", hardmax, DType::Float32, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "lp_norm", lp_norm, DType::Float32, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "cumsum", cumulative<bin::Add>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("cpu", "cumprod", cumulative<bin::Mul>, DType::Float32, DType::Float64,
                      DType::Int32, DType::Int64);

}  // namespace
}  // namespace lumen
