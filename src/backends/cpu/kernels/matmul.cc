// CPU matmul, gemm, fused_matmul and fused_gemm. float32 runs on Lumen's own GEMM (gemm/sgemm.h)
// with a constant B packed once when the model is compiled (the prepare functions below);
// float64 runs on BLAS. Both compute the product in blocks of C and finish each block (alpha,
// beta * C, bias, activation: backends/common/epilogue.h) right after it, while it is in cache.
#include <algorithm>
#include <memory>
#include <optional>
#include <type_traits>

#include "backends/common/epilogue.h"
#include "backends/common/matmul_plan.h"
#include "backends/cpu/blas.h"
#include "backends/cpu/gemm/sgemm.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Bytes of output one block holds: small enough to stay in L2 between the GEMM and the epilogue.
constexpr int64_t kEpilogueBlockBytes = 256 << 10;

// Output blocks a kernel computes and then finishes with the epilogue while they are in cache:
// calls fn(begin, end) over [0, total) in blocks of at most `block` items. With a pool and
// parts > 1 the range is first split into `parts` shares run in parallel, each walked block by
// block on its thread.
template <class Fn>
void for_each_output_block(ThreadPool *pool, int64_t total, int64_t block, int64_t parts,
                           const Fn &fn) {
  block = std::max<int64_t>(block, 1);
  auto walk = [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += block) fn(b, std::min(end, b + block));
  };
  if (!pool || parts <= 1 || total <= 1) {
    walk(0, total);
    return;
  }
  pool->parallel_for(total, (total + parts - 1) / parts, walk);
}

// The epilogue as a bias along n plus a clamp that the float GEMM's micro-kernels apply as they
// store (ukernels/f32_gemm.h), when it is one (bias + none, relu or clip); nullopt otherwise.
template <class T>
std::optional<ukernels::TileEpilogue> store_epilogue(const Epilogue<T> &epilogue,
                                                     const T *col_bias) {
  if constexpr (std::is_same_v<T, float>) {
    float lo, hi;
    if (epilogue.as_clamp(lo, hi)) return ukernels::TileEpilogue{nullptr, col_bias, lo, hi};
  }
  return std::nullopt;
}

// C[m, n] = op(A) op(B) over up to `max_threads` threads (0: the pool), then `finish` on every
// finished block of C (nullptr: none); or with `store` (float only) the micro-kernels apply that
// epilogue instead. `packed_b`, when given, is B packed ahead of time.
template <class T>
void product(ThreadPool &pool, int64_t max_threads, bool trans_a, bool trans_b, int64_t m,
             int64_t n, int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
             const cpu::PackedB *packed_b, T *c, int64_t ldc, const cpu::GemmFinish *finish,
             const std::optional<ukernels::TileEpilogue> &store = std::nullopt) {
  if constexpr (std::is_same_v<T, float>) {
    const cpu::StridedA sa(a, lda, trans_a);
    const cpu::StridedB sb(b, ldb, trans_b);
    const cpu::GemmB &gb = packed_b ? static_cast<const cpu::GemmB &>(*packed_b) : sb;
    cpu::sgemm(pool, m, n, k, sa, gb, c, ldc,
               {.max_threads = max_threads,
                .finish = store ? nullptr : finish,
                .epilogue = store ? &*store : nullptr});
  } else {
    // BLAS in blocks of rows small enough to stay in L2 until `finish` has run on them.
    int64_t parts = cpu::gemm_threads(pool, m, n, k);
    if (max_threads > 0) parts = std::min(parts, max_threads);
    const int64_t block_rows =
        std::max<int64_t>(16, kEpilogueBlockBytes / static_cast<int64_t>(sizeof(T) * size_t(n)));
    for_each_output_block(&pool, m, block_rows, parts, [&](int64_t r0, int64_t r1) {
      // Row r of op(A) is row r of A, or column r of A when transposed.
      blas::gemm(trans_a, trans_b, r1 - r0, n, k, T(1), a + (trans_a ? r0 : r0 * lda), lda, b, ldb,
                 T(0), c + r0 * ldc, ldc);
      if (finish) (*finish)(r0, r1, 0, n);
    });
  }
}

const cpu::PackedB *packed_b(const KernelContext &ctx) {
  return static_cast<const cpu::PackedB *>(ctx.prepared);
}

// Packs a constant float32 B [k, n] (or [n, k] with transB) once per compiled step.
std::shared_ptr<const void> pack_constant_b(const PrepareContext &ctx, bool trans_b) {
  const Tensor *b = ctx.constant(1);
  if (!b || b->dtype() != DType::Float32 || b->rank() != 2) return nullptr;
  const int64_t rows = b->shape()[0], cols = b->shape()[1];
  const int64_t k = trans_b ? cols : rows, n = trans_b ? rows : cols;
  return std::make_shared<cpu::PackedB>(cpu::StridedB(b->data<float>(), cols, trans_b), k, n,
                                        cpu::default_f32_gemm_microkernel());
}

std::shared_ptr<const void> prepare_matmul(const PrepareContext &ctx) {
  return pack_constant_b(ctx, false);
}

std::shared_ptr<const void> prepare_gemm(const PrepareContext &ctx) {
  return pack_constant_b(ctx, ctx.attrs.get_int("transB", 0) != 0);
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
  const auto store = has_epilogue ? store_epilogue(epilogue, bias) : std::nullopt;
  const cpu::PackedB *packed = plan.b_constant ? packed_b(ctx) : nullptr;

  // y[rows, n] = a @ b, each finished block through the epilogue.
  auto rows_product = [&](int64_t max_threads, int64_t rows, const T *at, const T *bt, T *yt) {
    const cpu::GemmFinish finish = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      for (int64_t r = r0; r < r1; ++r)
        epilogue.apply(yt + r * n + c0, c1 - c0, bias ? bias + c0 : nullptr, nullptr);
    };
    product<T>(ctx.pool, max_threads, false, false, rows, n, k, at, k, bt, n, packed, yt, n,
               has_epilogue ? &finish : nullptr, store);
  };
  if (plan.a_dense && plan.b_constant) {
    // [batch..., m, k] @ [k, n]: the batches of A are consecutive rows, so one tall GEMM.
    rows_product(0, checked_mul(batches, m), a, b, y);
    return;
  }
  auto one = [&](int64_t t, int64_t max_threads) {
    rows_product(max_threads, m, a + plan.a[t] * mk, b + plan.b[t] * kn, y + t * mn);
  };
  if (batches >= ctx.pool.size()) {
    // Enough matrices to keep every thread busy: one single-threaded GEMM per matrix.
    ctx.pool.parallel_for(batches, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) one(t, 1);
    });
  } else {
    for (int64_t t = 0; t < batches; ++t) one(t, 0);
  }
}

// gemm when `epilogue` has no activation; fused_gemm otherwise:
// Y = act(alpha * op(A) op(B) + beta * C), C broadcast to [m, n].
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
  // A bias row added as is: the epilogue's own (vectorized) bias path.
  const bool row_bias = c && c_rows == 1 && c_cols == n && beta == T(1) && alpha == T(1);
  const bool has_finish = c || alpha != T(1) || epilogue.has_activation();
  const auto store = has_finish && alpha == T(1) && (!c || row_bias)
                         ? store_epilogue(epilogue, row_bias ? c : nullptr)
                         : std::nullopt;
  // beta * C is computed even when beta == 0, so NaN in C propagates as in the reference.
  const cpu::GemmFinish finish = [&](int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
    for (int64_t i = r0; i < r1; ++i) {
      T *yrow = y + i * n;
      if (row_bias) {
        epilogue.apply(yrow + j0, j1 - j0, c + j0, nullptr);
        continue;
      }
      const T *crow = c ? c + (c_rows == 1 ? 0 : i) * c_cols : nullptr;
      for (int64_t j = j0; j < j1; ++j)
        yrow[j] = alpha * yrow[j] + (crow ? beta * crow[c_cols == 1 ? 0 : j] : T(0));
      epilogue.apply(yrow + j0, j1 - j0, nullptr, nullptr);
    }
  };
  const T *a = ta.data<T>(), *b = tb.data<T>();
  product<T>(ctx.pool, 0, trans_a, trans_b, m, n, k, a, trans_a ? m : k, b, trans_b ? k : n,
             packed_b(ctx), y, n, has_finish ? &finish : nullptr, store);
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
LUMEN_REGISTER_PREPARE("cpu", "matmul", prepare_matmul, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "fused_matmul", prepare_matmul, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "gemm", prepare_gemm, DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "fused_gemm", prepare_gemm, DType::Float32);

}  // namespace
}  // namespace lumen
