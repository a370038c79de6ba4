// CPU broadcasting binary ops. The shapes are first collapsed into runs whose inputs either walk
// (stride 1) or repeat one element (stride 0): output dims of size 1 are dropped and neighbouring
// dims merged whenever both inputs walk them as one, so [2,3,4]+[2,3,4] is one run of 24 and
// [2,3,4]+[4] is 6 rows of 4 where b restarts each row. Each run is one of four tight loops,
// compiled for the best vector ISA at run time. Runs are split across the thread pool by output
// element ranges (so even one long run is parallel) once the tensor is large enough to pay for it.
// The broadcast plan lives in fixed-size arrays: a call on a small tensor does not touch the heap.
#include <algorithm>
#include <array>
#include <type_traits>

#include "backends/common/binary_functors.h"
#include "backends/common/broadcast.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 16;  // output elements per parallel chunk
constexpr int64_t kRowTile = 256;    // see RowBroadcast
// y = f(a, b) over one run; load/store are the identity except for Float16/BFloat16.
template <class F, class TA, class TB>
inline void run(const TA *a, bool a_walks, const TB *b, bool b_walks, TA *y, int64_t len) {
  const F f;
  using bin::load;
  using bin::store;
  if (a_walks && b_walks) {
    for (int64_t i = 0; i < len; ++i) y[i] = store<TA>(f(load(a[i]), load(b[i])));
  } else if (a_walks) {
    const auto vb = load(*b);
    for (int64_t i = 0; i < len; ++i) y[i] = store<TA>(f(load(a[i]), vb));
  } else if (b_walks) {
    const auto va = load(*a);
    for (int64_t i = 0; i < len; ++i) y[i] = store<TA>(f(va, load(b[i])));
  } else {
    const TA v = store<TA>(f(load(*a), load(*b)));
    for (int64_t i = 0; i < len; ++i) y[i] = v;
  }
}

// One operand has the output's shape, the other the same shape with a run of dims [lo, hi) set to
// 1, followed by a short row (1 < inner <= 64): a per-channel scale of a channel-blocked image
// ([N, C/8, H, W, 8] * [N, C/8, 1, 1, 8]) or of an NHWC one. The general loop would call its run
// body once per short row; here each output row of `inner` reads the small operand's row
// `row / mid` (onnxruntime's squeeze-and-excitation Mul was 2x faster before).
struct RowBroadcast {
  int64_t mid = 1, inner = 1;
  bool a_full = true;
};

bool row_broadcast(const Shape &a, const Shape &b, const Shape &y, RowBroadcast &rb) {
  constexpr int64_t kShortRow = 64;  // at most kRowTile
  if (a.rank() != y.rank() || b.rank() != y.rank() || a == b) return false;
  rb.a_full = a == y;
  const Shape &small = rb.a_full ? b : a;
  if (!rb.a_full && b != y) return false;
  size_t lo = y.rank(), hi = 0;
  for (size_t d = 0; d < y.rank(); ++d)
    if (small[d] != y[d]) {
      if (small[d] != 1 || (hi != 0 && hi != d)) return false;  // not 1, or a second run
      lo = std::min(lo, d), hi = d + 1;
    }
  rb.mid = rb.inner = 1;
  for (size_t d = lo; d < hi; ++d) rb.mid *= y[d];
  for (size_t d = hi; d < y.rank(); ++d) rb.inner *= y[d];
  return rb.inner > 1 && rb.inner <= kShortRow && rb.mid > 1;
}

// Plain arithmetic types vectorize; the 16-bit floats convert per element and gain nothing.
template <class T>
constexpr bool kVectorizes = std::is_arithmetic_v<T>;

// Runs `body` compiled for the best vector ISA where f over these dtypes vectorizes.
template <class F, class TA, class TB, class Body>
void run_vectorized(Body &body) {
  if constexpr (kVectorizes<TA> && kVectorizes<TB> && !std::is_same_v<F, bin::Pow>)
    vec::run_best(body);
  else
    body();
}

// TA is the dtype of input 0 and of the output; TB the dtype of input 1 (differs only for pow).
template <class F, class TA, class TB>
void binary_typed(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const TA *pa = a.data<TA>();
  const TB *pb = b.data<TB>();
  TA *py = y.data<TA>();
  if constexpr (std::is_same_v<F, bin::Div> && std::is_integral_v<TA>) {
    // With a non-empty output every element of b is used, so any zero is a division by zero.
    for (int64_t i = 0, nb = b.numel(); i < nb; ++i)
      if (pb[i] == TB(0)) ctx.fail("integer division by zero");
  }
  if constexpr (std::is_same_v<F, bin::Pow> && std::is_floating_point_v<TA> &&
                std::is_arithmetic_v<TB>) {
    // x^2, x^3, x^4 by multiplication (GELU's tanh form cubes its input; std::pow per element was
    // 16 ns, most of GPT-2's MLP time), vectorized. Within 1 ulp of pow, as x * x * x rounds twice.
    const double e = b.numel() == 1 ? double(pb[0]) : 0.0;
    if (a.shape() == y.shape() && (e == 2.0 || e == 3.0 || e == 4.0)) {
      const int power = int(e);
      ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        vec::run_best([&]() LUMEN_VEC_INLINE {
          for (int64_t i = begin; i < end; ++i) {
            const TA x = pa[i], sq = x * x;
            py[i] = power == 2 ? sq : power == 3 ? sq * x : sq * sq;
          }
        });
      });
      return;
    }
  }
  if (RowBroadcast rb; row_broadcast(a.shape(), b.shape(), y.shape(), rb)) {
    // The small operand's row repeated to fill a tile of up to kRowTile values (a multiple of its
    // length), so that both operands walk runs of that many values through the vectorized loop.
    // Only as many repeats as an outer index has rows: a 7x7 map's 49.
    const int64_t tile = std::min(kRowTile / rb.inner, rb.mid) * rb.inner;
    ctx.pool.parallel_for(
        n / rb.inner, std::max<int64_t>(1, kGrain / rb.inner), [&](int64_t begin, int64_t end) {
          TB b_tile[kRowTile];
          TA a_tile[kRowTile];
          int64_t tiled_row = -1;  // the small operand's row now in the tile
          auto body = [&]() LUMEN_VEC_INLINE {
            for (int64_t r = begin; r < end;) {
              const int64_t o = r / rb.mid, stop = std::min(end, (o + 1) * rb.mid);
              if (o != tiled_row) {
                for (int64_t at = 0; at < tile; at += rb.inner)
                  for (int64_t j = 0; j < rb.inner; ++j) {
                    if (rb.a_full)
                      b_tile[at + j] = pb[o * rb.inner + j];
                    else
                      a_tile[at + j] = pa[o * rb.inner + j];
                  }
                tiled_row = o;
              }
              for (int64_t at = r * rb.inner; at < stop * rb.inner; at += tile) {
                const int64_t len = std::min(tile, stop * rb.inner - at);
                if (rb.a_full)
                  run<F, TA, TB>(pa + at, true, b_tile, true, py + at, len);
                else
                  run<F, TA, TB>(a_tile, true, pb + at, true, py + at, len);
              }
              r = stop;
            }
          };
          run_vectorized<F, TA, TB>(body);
        });
    return;
  }
  BroadcastLoop runs;
  if (!runs.init(a.shape(), b.shape(), y.shape()))
    ctx.fail("broadcasting ", a.shape().to_string(), " and ", b.shape().to_string(), ": at most ",
             kMaxBroadcastRank, " dims are supported");
  const bool a_walks = runs.a_walks(), b_walks = runs.b_walks();
  ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    auto body = [&]() LUMEN_VEC_INLINE {
      runs.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
        run<F, TA, TB>(pa + ao, a_walks, pb + bo, b_walks, py + yo, len);
      });
    };
    run_vectorized<F, TA, TB>(body);
  });
}

template <class F>
void binary(KernelContext &ctx) {
  const DType da = ctx.input(0).dtype(), db = ctx.input(1).dtype();
  if (!bin::visit_binary_dtypes<F>(
          da, db, [&](auto ta, auto tb) { binary_typed<F, decltype(ta), decltype(tb)>(ctx); }))
    ctx.fail("no cpu kernel for ", dtype_name(da), " and ", dtype_name(db), " inputs");
}

// mean(x0, x1, ...): the inputs added into y one at a time (each broadcast by the run loop), then
// scaled by 1 / count.
template <class T>
void mean_typed(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  T *py = y.data<T>();
  const int64_t n = y.numel();
  if (n == 0) return;
  const size_t count = ctx.inputs.size();
  for (size_t k = 0; k < count; ++k) {
    const Tensor &x = ctx.input(k);
    const T *px = x.data<T>();
    BroadcastLoop runs;
    if (!runs.init(y.shape(), x.shape(), y.shape()))
      ctx.fail("input ", x.shape().to_string(), ": at most ", kMaxBroadcastRank,
               " dims are supported");
    const bool walks = runs.b_walks();
    ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      runs.for_range(begin, end, [&](int64_t yo, int64_t, int64_t xo, int64_t len) {
        T *out = py + yo;
        const T *in = px + xo;
        for (int64_t i = 0; i < len; ++i) out[i] = (k == 0 ? T(0) : out[i]) + in[walks ? i : 0];
        if (k + 1 == count)
          for (int64_t i = 0; i < len; ++i) out[i] /= T(count);
      });
    });
  }
}

void mean(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return mean_typed<double>(ctx);
  mean_typed<float>(ctx);
}
LUMEN_REGISTER_KERNEL("cpu", "mean", mean, DType::Float32, DType::Float64);

#define LUMEN_CPU_BINARY(name, F) \
  LUMEN_REGISTER_KERNEL("cpu", name, binary<F>, LUMEN_NUMERIC_DTYPES)

LUMEN_CPU_BINARY("add", bin::Add);
LUMEN_CPU_BINARY("sub", bin::Sub);
LUMEN_CPU_BINARY("mul", bin::Mul);
LUMEN_CPU_BINARY("div", bin::Div);
LUMEN_CPU_BINARY("maximum", bin::Maximum);
LUMEN_CPU_BINARY("minimum", bin::Minimum);
LUMEN_CPU_BINARY("pow", bin::Pow);
LUMEN_CPU_BINARY("prelu", bin::PRelu);

#define LUMEN_CPU_INTEGER_BINARY(name, F)                                                \
  LUMEN_REGISTER_KERNEL("cpu", name, binary<F>, DType::Int8, DType::Int16, DType::Int32, \
                        DType::Int64, DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64)
LUMEN_CPU_INTEGER_BINARY("bitwise_and", bin::BitAnd);
LUMEN_CPU_INTEGER_BINARY("bitwise_or", bin::BitOr);
LUMEN_CPU_INTEGER_BINARY("bitwise_xor", bin::BitXor);

void bit_shift(KernelContext &ctx) {
  if (ctx.attrs.get_string("direction", "") == "LEFT") return binary<bin::ShiftLeft>(ctx);
  binary<bin::ShiftRight>(ctx);
}
LUMEN_REGISTER_KERNEL("cpu", "bit_shift", bit_shift, DType::Int8, DType::Int16, DType::Int32,
                      DType::Int64, DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64);

}  // namespace
}  // namespace lumen
