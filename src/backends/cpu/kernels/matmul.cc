// CPU matmul, gemm, fused_matmul and fused_gemm on BLAS, threaded through the runtime's pool
// (see blas.h). The fused ops compute the product in blocks of output rows and finish each block
// with the epilogue (bias, activation: backends/common/epilogue.h) while it is still in cache.
#include <algorithm>
#include <vector>

#include "backends/common/epilogue.h"
#include "backends/common/matmul_plan.h"
#include "backends/cpu/blas.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Rows of C = alpha * op(A) op(B) + beta * C in blocks that fit in cache, over `parts` threads of
// `pool`; `fill(r0, r1)` prepares rows [r0, r1) of C before their GEMM and `finish(r0, r1)` runs
// the epilogue on them right after it.
template <class T, class Fill, class Finish>
void gemm_row_blocks(ThreadPool &pool, int64_t parts, bool trans_a, bool trans_b, int64_t m,
                     int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,
                     int64_t ldb, T beta, T *c, int64_t ldc, const Fill &fill,
                     const Finish &finish) {
  const int64_t block_rows =
      std::max<int64_t>(16, kEpilogueBlockBytes / static_cast<int64_t>(sizeof(T) * size_t(n)));
  for_each_output_block(&pool, m, block_rows, parts, [&](int64_t r0, int64_t r1) {
    fill(r0, r1);
    // Row r of op(A) is row r of A, or column r of A when transposed.
    blas::gemm(trans_a, trans_b, r1 - r0, n, k, alpha, a + (trans_a ? r0 : r0 * lda), lda, b, ldb,
               beta, c + r0 * ldc, ldc);
    finish(r0, r1);
  });
}

// matmul when `bias` is nullptr and `epilogue` has no activation; fused_matmul otherwise.
template <class T>
void matmul_with_epilogue(KernelContext &ctx, const T *bias, const Epilogue<T> &epilogue) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  const MatmulPlan plan = plan_matmul(ctx, ta.shape(), tb.shape());
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  if (ctx.output(0).numel() == 0) return;
  const auto batches = static_cast<int64_t>(plan.a.size());
  const T *a = ta.data<T>();
  const T *b = tb.data<T>();
  T *y = ctx.output(0).data<T>();
  const int64_t mk = checked_mul(m, k), kn = checked_mul(k, n), mn = checked_mul(m, n);
  const bool has_epilogue = bias || epilogue.has_activation();
  // y = a @ b for `rows` rows of a, over `parts` threads, each row block finished by the epilogue.
  auto rows_with_epilogue = [&](int64_t parts, int64_t rows, const T *at, const T *bt, T *yt) {
    gemm_row_blocks(
        ctx.pool, parts, false, false, rows, n, k, T(1), at, k, bt, n, T(0), yt, n,
        [](int64_t, int64_t) {},
        [&](int64_t r0, int64_t r1) {
          if (!bias) return epilogue.apply(yt + r0 * n, (r1 - r0) * n, nullptr, nullptr);
          for (int64_t r = r0; r < r1; ++r) epilogue.apply(yt + r * n, n, bias, nullptr);
        });
  };

  if (plan.a_dense && plan.b_constant) {
    // [batch..., m, k] @ [k, n]: the batches of A are consecutive rows, so one tall GEMM.
    const int64_t rows = checked_mul(batches, m);
    if (has_epilogue)
      rows_with_epilogue(gemm_parts(ctx.pool, rows, n, k), rows, a, b, y);
    else
      blas::parallel_gemm(ctx.pool, false, false, rows, n, k, T(1), a, k, b, n, T(0), y, n);
    return;
  }
  auto one = [&](int64_t t, bool threaded) {
    const T *at = a + plan.a[t] * mk;
    const T *bt = b + plan.b[t] * kn;
    T *yt = y + t * mn;
    if (has_epilogue)
      rows_with_epilogue(threaded ? gemm_parts(ctx.pool, m, n, k) : 1, m, at, bt, yt);
    else if (threaded)
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

// gemm when `epilogue` has no activation; fused_gemm otherwise.
template <class T>
void gemm_with_epilogue(KernelContext &ctx, const Epilogue<T> &epilogue) {
  const Tensor &ta = ctx.input(0), &tb = ctx.input(1);
  const bool trans_a = ctx.attrs.get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs.get_int("transB", 0) != 0;
  const auto alpha = static_cast<T>(ctx.attrs.get_float("alpha", 1.0));
  const auto beta = static_cast<T>(ctx.attrs.get_float("beta", 1.0));
  const int64_t m = ctx.output(0).shape()[0], n = ctx.output(0).shape()[1];
  const int64_t k = trans_a ? ta.shape()[0] : ta.shape()[1];
  T *y = ctx.output(0).data<T>();
  if (m == 0 || n == 0) return;
  const T *c = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  const Shape c_shape = c ? ctx.input(2).shape() : Shape{};
  const int64_t c_rows = c_shape.rank() == 2 ? c_shape[0] : 1;
  const int64_t c_cols = c_shape.rank() == 0 ? 1 : c_shape[c_shape.rank() - 1];
  // Y = beta * C (broadcast), then the GEMM accumulates into it. Scaling here rather than in
  // BLAS keeps beta == 0 with NaN in C identical to the reference (0 * NaN = NaN).
  auto fill_rows = [&](int64_t r0, int64_t r1) {
    if (!c) return;
    for (int64_t i = r0; i < r1; ++i) {
      const T *crow = c + (c_rows == 1 ? 0 : i) * c_cols;
      T *yrow = y + i * n;
      if (c_cols == 1)
        std::fill(yrow, yrow + n, beta * crow[0]);
      else
        for (int64_t j = 0; j < n; ++j) yrow[j] = beta * crow[j];
    }
  };
  const T gemm_beta = c ? T(1) : T(0);
  const T *a = ta.data<T>(), *b = tb.data<T>();
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  if (epilogue.has_activation()) {
    gemm_row_blocks(ctx.pool, gemm_parts(ctx.pool, m, n, k), trans_a, trans_b, m, n, k, alpha, a,
                    lda, b, ldb, gemm_beta, y, n, fill_rows, [&](int64_t r0, int64_t r1) {
                      epilogue.apply(y + r0 * n, (r1 - r0) * n, nullptr, nullptr);
                    });
    return;
  }
  fill_rows(0, m);
  blas::parallel_gemm(ctx.pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, gemm_beta, y, n);
}

template <class T>
void matmul(KernelContext &ctx) {
  matmul_with_epilogue<T>(ctx, nullptr, Epilogue<T>());
}

// fused_matmul(a, b, bias?): act(matmul(a, b) + bias), bias [N] along the last dim.
template <class T>
void fused_matmul(KernelContext &ctx) {
  const Tensor *bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Shape &y = ctx.output(0).shape();
  if (bias && (y.rank() == 0 || bias->numel() != y[y.rank() - 1]))
    ctx.fail("bias ", bias->shape().to_string(), " does not match the output ", y.to_string());
  matmul_with_epilogue<T>(ctx, bias ? bias->data<T>() : nullptr, Epilogue<T>(ctx));
}

template <class T>
void gemm(KernelContext &ctx) {
  gemm_with_epilogue<T>(ctx, Epilogue<T>());
}

// fused_gemm(a, b, c?): act(alpha * op(A) op(B) + beta * C).
template <class T>
void fused_gemm(KernelContext &ctx) {
  gemm_with_epilogue<T>(ctx, Epilogue<T>(ctx));
}

LUMEN_REGISTER_KERNEL("cpu", "matmul", matmul<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "matmul", matmul<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "gemm", gemm<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "gemm", gemm<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "fused_matmul", fused_matmul<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "fused_matmul", fused_matmul<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "fused_gemm", fused_gemm<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "fused_gemm", fused_gemm<double>, DType::Float64);

}  // namespace
}  // namespace lumen
