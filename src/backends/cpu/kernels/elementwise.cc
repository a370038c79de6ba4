// CPU broadcasting binary ops. The shapes are first collapsed into runs whose inputs either walk
// (stride 1) or repeat one element (stride 0): output dims of size 1 are dropped and neighbouring
// dims merged whenever both inputs walk them as one, so [2,3,4]+[2,3,4] is one run of 24 and
// [2,3,4]+[4] is 6 rows of 4 where b restarts each row. Each run is one of four tight loops,
// compiled for the best vector ISA at run time. Runs are split across the thread pool by output
// element ranges (so even one long run is parallel) once the tensor is large enough to pay for it.
// Everything lives in fixed-size arrays: a call on a small tensor does not touch the heap.
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
constexpr size_t kMaxRank = 12;      // larger ranks use the (allocating) BroadcastLoop

// BroadcastLoop's collapse (backends/common/broadcast.h) on the stack.
class Runs {
 public:
  // False when a shape has more than kMaxRank dims.
  bool init(const Shape &a, const Shape &b, const Shape &out) {
    const size_t r = out.rank();
    if (r > kMaxRank) return false;
    std::array<int64_t, kMaxRank> sa{}, sb{};
    strides(a, r, sa);
    strides(b, r, sb);
    rank_ = 0;
    for (size_t i = 0; i < r; ++i) {
      if (out[i] == 1) continue;
      if (rank_ > 0 && sa_[rank_ - 1] == sa[i] * out[i] && sb_[rank_ - 1] == sb[i] * out[i]) {
        dims_[rank_ - 1] *= out[i];
        sa_[rank_ - 1] = sa[i];
        sb_[rank_ - 1] = sb[i];
      } else {
        dims_[rank_] = out[i];
        sa_[rank_] = sa[i];
        sb_[rank_] = sb[i];
        ++rank_;
      }
    }
    if (rank_ == 0) {  // a single element
      dims_[0] = 1;
      sa_[0] = sb_[0] = 0;
      rank_ = 1;
    }
    return true;
  }

  bool a_walks() const { return sa_[rank_ - 1] != 0; }
  bool b_walks() const { return sb_[rank_ - 1] != 0; }

  // fn(out_offset, a_offset, b_offset, len) for the runs covering output elements [begin, end).
  template <class Fn>
  void for_range(int64_t begin, int64_t end, Fn &&fn) const {
    const size_t outer = rank_ - 1;
    const int64_t inner = dims_[outer];
    std::array<int64_t, kMaxRank> index{};
    int64_t row = begin / inner, col = begin % inner, a = 0, b = 0;
    for (size_t d = outer; d-- > 0;) {
      index[d] = row % dims_[d];
      row /= dims_[d];
      a += index[d] * sa_[d];
      b += index[d] * sb_[d];
    }
    while (begin < end) {
      const int64_t len = std::min(inner - col, end - begin);
      fn(begin, a + col * sa_[outer], b + col * sb_[outer], len);
      begin += len;
      col = 0;
      for (size_t d = outer; d-- > 0;) {
        a += sa_[d];
        b += sb_[d];
        if (++index[d] < dims_[d]) break;
        a -= sa_[d] * dims_[d];
        b -= sb_[d] * dims_[d];
        index[d] = 0;
      }
    }
  }

 private:
  // Element strides of contiguous `in` in the index space of a rank-r output (0 where broadcast).
  static void strides(const Shape &in, size_t r, std::array<int64_t, kMaxRank> &s) {
    const size_t lead = r - in.rank();
    int64_t stride = 1;
    for (size_t i = in.rank(); i-- > 0;) {
      s[lead + i] = in[i] != 1 ? stride : 0;
      stride *= in[i];
    }
  }

  size_t rank_ = 0;
  std::array<int64_t, kMaxRank> dims_{}, sa_{}, sb_{};
};

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

// Plain arithmetic types vectorize; the 16-bit floats convert per element and gain nothing.
template <class T>
constexpr bool kVectorizes = std::is_arithmetic_v<T>;

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
  Runs runs;
  if (!runs.init(a.shape(), b.shape(), y.shape())) {
    const BroadcastLoop loop(a.shape(), b.shape(), y.shape());
    const bool a_walks = loop.a_inner_stride() != 0, b_walks = loop.b_inner_stride() != 0;
    ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      loop.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
        run<F, TA, TB>(pa + ao, a_walks, pb + bo, b_walks, py + yo, len);
      });
    });
    return;
  }
  const bool a_walks = runs.a_walks(), b_walks = runs.b_walks();
  ctx.pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    auto body = [&]() LUMEN_VEC_INLINE {
      runs.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
        run<F, TA, TB>(pa + ao, a_walks, pb + bo, b_walks, py + yo, len);
      });
    };
    if constexpr (kVectorizes<TA> && kVectorizes<TB> && !std::is_same_v<F, bin::Pow>)
      vec::run_best(body);
    else
      body();
  });
}

template <class F>
void binary(KernelContext &ctx) {
  const DType da = ctx.input(0).dtype(), db = ctx.input(1).dtype();
  bool done = false;
  bin::visit_dtype(da, [&](auto ta) {
    using TA = decltype(ta);
    if constexpr (!std::is_same_v<TA, bool>) {
      if constexpr (std::is_same_v<F, bin::Pow>) {
        bin::visit_dtype(db, [&](auto tb) {
          using TB = decltype(tb);
          if constexpr (!std::is_same_v<TB, bool>) {
            binary_typed<F, TA, TB>(ctx);
            done = true;
          }
        });
      } else if (da == db) {
        binary_typed<F, TA, TA>(ctx);
        done = true;
      }
    }
  });
  if (!done) ctx.fail("no cpu kernel for ", dtype_name(da), " and ", dtype_name(db), " inputs");
}

#define LUMEN_CPU_BINARY(name, F) \
  LUMEN_REGISTER_KERNEL("cpu", name, binary<F>, LUMEN_NUMERIC_DTYPES)

LUMEN_CPU_BINARY("add", bin::Add);
LUMEN_CPU_BINARY("sub", bin::Sub);
LUMEN_CPU_BINARY("mul", bin::Mul);
LUMEN_CPU_BINARY("div", bin::Div);
LUMEN_CPU_BINARY("maximum", bin::Maximum);
LUMEN_CPU_BINARY("minimum", bin::Minimum);
LUMEN_CPU_BINARY("pow", bin::Pow);

}  // namespace
}  // namespace lumen
