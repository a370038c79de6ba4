// CPU matmul and gemm on BLAS, threaded through the runtime's pool (see blas.h).
#include <algorithm>
#include <vector>

#include "backends/cpu/blas.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Per output batch index, the matrix index in A and in B (NumPy broadcasting of the batch dims).
struct BatchPlan {
  std::vector<int64_t> a, b;
  bool a_dense = true;     // a[t] == t: A's batch dims are the output's
  bool b_constant = true;  // b[t] == 0: B is one matrix shared by every batch
};

BatchPlan plan_batches(const Shape &a, const Shape &b) {
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
  BatchPlan plan;
  plan.a.resize(static_cast<size_t>(count));
  plan.b.resize(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) {
    int64_t rest = t, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % out[i];
      rest /= out[i];
      if (da[i] != 1) oa += idx * sa;
      if (db[i] != 1) ob += idx * sb;
      sa *= da[i];
      sb *= db[i];
    }
    plan.a[t] = oa;
    plan.b[t] = ob;
    plan.a_dense = plan.a_dense && oa == t;
    plan.b_constant = plan.b_constant && ob == 0;
  }
  return plan;
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
  if (ctx.output(0).numel() == 0) return;
  const BatchPlan plan = plan_batches(sa, sb);
  const auto batches = static_cast<int64_t>(plan.a.size());
  const T *a = ta.data<T>();
  const T *b = tb.data<T>();
  T *y = ctx.output(0).data<T>();
  const int64_t mk = checked_mul(m, k), kn = checked_mul(k, n), mn = checked_mul(m, n);

  if (plan.a_dense && plan.b_constant) {
    // [batch..., m, k] @ [k, n]: the batches of A are consecutive rows, so one tall GEMM.
    blas::parallel_gemm(ctx.pool, false, false, checked_mul(batches, m), n, k, T(1), a, k, b, n,
                        T(0), y, n);
    return;
  }
  auto one = [&](int64_t t, bool threaded) {
    const T *at = a + plan.a[t] * mk;
    const T *bt = b + plan.b[t] * kn;
    T *yt = y + t * mn;
    if (threaded)
      blas::parallel_gemm(ctx.pool, false, false, m, n, k, T(1), at, k, bt, n, T(0), yt, n);
    else
      blas::gemm(false, false, m, n, k, T(1), at, k, bt, n, T(0), yt, n);
  };
  if (batches >= ctx.pool.size()) {
    // Enough matrices to keep every thread busy: one single-threaded GEMM per matrix.
    ctx.pool.parallel_for(batches, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) one(t, false);
    });
  } else {
    for (int64_t t = 0; t < batches; ++t) one(t, true);
  }
}

template <class T>
void gemm(KernelContext &ctx) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  const bool trans_a = ctx.attrs.get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs.get_int("transB", 0) != 0;
  const auto alpha = static_cast<T>(ctx.attrs.get_float("alpha", 1.0));
  const auto beta = static_cast<T>(ctx.attrs.get_float("beta", 1.0));
  const int64_t m = ctx.output(0).shape()[0], n = ctx.output(0).shape()[1];
  const int64_t k = trans_a ? ta.shape()[0] : ta.shape()[1];
  T *y = ctx.output(0).data<T>();
  if (m == 0 || n == 0) return;
  T gemm_beta = T(0);
  if (ctx.has_input(2)) {
    // Y = beta * C (broadcast), then the GEMM accumulates into it. Scaling here rather than in
    // BLAS keeps beta == 0 with NaN in C identical to the reference (0 * NaN = NaN).
    const Tensor &tc = ctx.input(2);
    const T *c = tc.data<T>();
    const Shape &sc = tc.shape();
    const int64_t c_rows = sc.rank() == 2 ? sc[0] : 1;
    const int64_t c_cols = sc.rank() == 0 ? 1 : sc[sc.rank() - 1];
    for (int64_t i = 0; i < m; ++i) {
      const T *crow = c + (c_rows == 1 ? 0 : i) * c_cols;
      T *yrow = y + i * n;
      if (c_cols == 1)
        std::fill(yrow, yrow + n, beta * crow[0]);
      else
        for (int64_t j = 0; j < n; ++j) yrow[j] = beta * crow[j];
    }
    gemm_beta = T(1);
  }
  blas::parallel_gemm(ctx.pool, trans_a, trans_b, m, n, k, alpha, ta.data<T>(), trans_a ? m : k,
                      tb.data<T>(), trans_b ? k : n, gemm_beta, y, n);
}

LUMEN_REGISTER_KERNEL("cpu", "matmul", matmul<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "matmul", matmul<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "gemm", gemm<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "gemm", gemm<double>, DType::Float64);

}  // namespace
}  // namespace lumen
