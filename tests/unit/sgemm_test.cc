// Lumen's own GEMM (backends/cpu/gemm) against a float64 reference product, for every
// micro-kernel this CPU supports: edge tiles, transposes, prepacked operands, a row-table B,
// accumulation, depth blocks, the finish hook and threading (a row split packs B once, shared).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm/sgemm.h"

namespace lumen::cpu {
namespace {

std::vector<float> random_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

struct Case {
  int64_t m, n, k;
  bool trans_a = false, trans_b = false;
};

// The cases cover tiles cut by every edge and more than one depth, row and column block.
std::vector<Case> cases() {
  return {{1, 1, 1},           {5, 7, 3},
          {12, 32, 16},        {13, 33, 17},
          {25, 70, 600},       {200, 45, 31},
          {7, 1100, 40, true}, {300, 17, 520, false, true},
          {64, 64, 0},         {33, 65, 129, true, true},
          {30, 40, 1100},   // past the deep blocks of a prepacked B alone (2 x 550)
          {1, 70, 1100},    // a matrix-vector product: one row, the whole depth in one block
          {1, 40, 16400}};  // deeper than one block of it
}

// C = op(A) op(B) in float64.
std::vector<double> reference(const Case &c, const std::vector<float> &a,
                              const std::vector<float> &b) {
  std::vector<double> out(static_cast<size_t>(c.m * c.n), 0.0);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = c.trans_a ? a[p * c.m + i] : a[i * c.k + p];
        const double bv = c.trans_b ? b[j * c.k + p] : b[p * c.n + j];
        sum += av * bv;
      }
      out[i * c.n + j] = sum;
    }
  return out;
}

// |got - want| <= 1e-5 * (1 + k): float32 accumulation error grows with the depth.
void expect_near(const std::vector<float> &got, const std::vector<double> &want, const Case &c,
                 const std::string &what) {
  const double tol = 1e-5 * (1.0 + static_cast<double>(c.k));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol)
        << what << " m=" << c.m << " n=" << c.n << " k=" << c.k << " at " << i;
}

std::vector<const F32GemmMicrokernel *> supported_kernels() {
  std::vector<const F32GemmMicrokernel *> out;
  for (const F32GemmMicrokernel &k : f32_gemm_microkernels())
    if (k.supported()) out.push_back(&k);
  return out;
}

// A plain B that says it is gathered, like an im2col matrix: a row split then packs it once,
// shared by its threads.
class GatheredB final : public GemmB {
 public:
  explicit GatheredB(const GemmB &source) : source_(source) {}
  PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                    float *buffer) const override {
    return source_.panels(n0, nc, k0, kc, nr, buffer);
  }
  bool gathered() const override { return true; }

 private:
  const GemmB &source_;
};

TEST(Sgemm, EveryMicrokernelMatchesReference) {
  ThreadPool pool(2);
  ASSERT_FALSE(supported_kernels().empty());
  for (const F32GemmMicrokernel *kernel : supported_kernels()) {
    SCOPED_TRACE(std::string(kernel->name));
    for (const Case &c : cases()) {
      const auto a = random_values(c.m * c.k, 1), b = random_values(c.k * c.n, 2);
      const auto want = reference(c, a, b);
      const StridedA sa(a.data(), c.trans_a ? c.m : c.k, c.trans_a);
      const StridedB sb(b.data(), c.trans_b ? c.k : c.n, c.trans_b);
      const PackedA pa(sa, c.m, c.k, *kernel);
      const PackedB pb(sb, c.k, c.n, *kernel);
      const GatheredB gathered(sb);
      for (int variant = 0; variant < 6; ++variant) {
        const GemmA &ga = variant & 1 ? static_cast<const GemmA &>(pa) : sa;
        const GemmB &gb = variant & 4   ? static_cast<const GemmB &>(gathered)
                          : variant & 2 ? static_cast<const GemmB &>(pb)
                                        : sb;
        for (int64_t threads : {1, 2}) {
          // NaN in C must not leak into an overwriting product.
          std::vector<float> out(static_cast<size_t>(c.m * c.n), NAN);
          sgemm(pool, c.m, c.n, c.k, ga, gb, out.data(), c.n,
                {.max_threads = threads, .kernel = kernel});
          expect_near(out, want, c,
                      "variant " + std::to_string(variant) + " threads " + std::to_string(threads));
        }
      }
    }
  }
}

// B given as a row table (a conv's shifted input planes): rows in any order, unaligned and
// overlapping. The buffer ends right before an inaccessible page, so packing that reads past a
// row's last column would crash.
TEST(Sgemm, RowTableOperandIsReadWithinItsColumns) {
  ThreadPool pool(2);
  const long page = sysconf(_SC_PAGESIZE);
  for (const F32GemmMicrokernel *kernel : supported_kernels()) {
    SCOPED_TRACE(std::string(kernel->name));
    for (const Case &c : cases()) {
      if (c.trans_a || c.trans_b) continue;
      // Row p lives at offset (k - 1 - p) * (n - 1) + 3: reversed, overlapping by one column.
      const int64_t span = (c.k > 0 ? (c.k - 1) * std::max<int64_t>(c.n - 1, 1) : 0) + c.n + 3;
      const size_t bytes = (static_cast<size_t>(span) * sizeof(float) + page - 1) / page * page;
      void *mapping =
          mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      ASSERT_NE(mapping, MAP_FAILED);
      ASSERT_EQ(mprotect(static_cast<char *>(mapping) + bytes, page, PROT_NONE), 0);
      float *buffer = reinterpret_cast<float *>(static_cast<char *>(mapping) + bytes) - span;
      std::vector<int64_t> rows(static_cast<size_t>(c.k));
      for (int64_t p = 0; p < c.k; ++p) rows[p] = (c.k - 1 - p) * std::max<int64_t>(c.n - 1, 1) + 3;
      // Dense B with the overlapping column shared: row p's last value is row p + 1's first.
      std::vector<float> b(static_cast<size_t>(c.k * c.n));
      const auto values = random_values(span, 7);
      std::copy(values.begin(), values.end(), buffer);
      for (int64_t p = 0; p < c.k; ++p)
        for (int64_t j = 0; j < c.n; ++j) b[p * c.n + j] = buffer[rows[p] + j];
      const auto a = random_values(c.m * c.k, 8);
      const auto want = reference(c, a, b);
      const PackedA pa(StridedA(a.data(), c.k, false), c.m, c.k, *kernel);
      const RowTableB table(buffer, rows);
      for (int64_t threads : {1, 2}) {
        std::vector<float> out(static_cast<size_t>(c.m * c.n), NAN);
        sgemm(pool, c.m, c.n, c.k, pa, table, out.data(), c.n,
              {.max_threads = threads, .kernel = kernel});
        expect_near(out, want, c, "threads " + std::to_string(threads));
      }
      munmap(mapping, bytes + page);
    }
  }
}

TEST(Sgemm, AccumulatesIntoCAndLeavesTheRestOfARowAlone) {
  ThreadPool pool(2);
  const Case c{37, 50, 70};
  const int64_t ldc = 53;  // C is a window of a wider matrix
  const auto a = random_values(c.m * c.k, 3), b = random_values(c.k * c.n, 4);
  auto want = reference(c, a, b);
  for (const F32GemmMicrokernel *kernel : supported_kernels()) {
    std::vector<float> out(static_cast<size_t>(c.m * ldc), 0.5f);
    sgemm(pool, c.m, c.n, c.k, StridedA(a.data(), c.k, false), StridedB(b.data(), c.n, false),
          out.data(), ldc, {.accumulate = true, .kernel = kernel});
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j)
        ASSERT_NEAR(out[i * ldc + j], want[i * c.n + j] + 0.5, 1e-3) << kernel->name;
      for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[i * ldc + j], 0.5f) << kernel->name;
    }
  }
}

// Streaming stores (TileStore::kStream): each micro-kernel's tile, on line-aligned and on
// misaligned C (the kernels fall back to plain stores there), with and without an epilogue, must
// equal the overwriting store; and sgemm on a C larger than any L2 (which it streams) must match
// the reference, C aligned or not, ldc a multiple of the vector width or not.
TEST(Sgemm, StreamingStoresWriteWhatPlainStoresWrite) {
  for (const F32GemmMicrokernel *kernel : supported_kernels()) {
    SCOPED_TRACE(std::string(kernel->name));
    const int64_t k = 9, ldc = 4 * kernel->nr;
    // Panels are 64-byte aligned, as the packers make them.
    alignas(64) static float a[9 * 16], b[9 * 32];
    const auto av = random_values(k * kernel->mr, 5), bv = random_values(k * kernel->nr, 6);
    std::copy(av.begin(), av.end(), a);
    std::copy(bv.begin(), bv.end(), b);
    const std::vector<float> bias = random_values(kernel->mr, 7);
    const ukernels::TileEpilogue relu{bias.data(), nullptr, 0.0f, INFINITY};
    // 64-byte aligned storage; offset 0 is line-aligned, offset 1 is not.
    alignas(64) static float plain[4096], streamed[4096];
    for (int64_t offset : {0, 1})
      for (const ukernels::TileEpilogue *e :
           {static_cast<const ukernels::TileEpilogue *>(nullptr), &relu}) {
        std::fill(std::begin(plain), std::end(plain), NAN);
        std::fill(std::begin(streamed), std::end(streamed), NAN);
        kernel->run(k, a, b, plain + offset, ldc, kernel->mr, kernel->nr,
                    ukernels::TileStore::kOverwrite, e, nullptr, {});
        kernel->run(k, a, b, streamed + offset, ldc, kernel->mr, kernel->nr,
                    ukernels::TileStore::kStream, e, nullptr, {});
        for (size_t i = 0; i < 4096; ++i)
          ASSERT_TRUE(plain[i] == streamed[i] || (std::isnan(plain[i]) && std::isnan(streamed[i])))
              << "offset " << offset << " epilogue " << (e != nullptr) << " at " << i;
      }
  }
  ThreadPool pool(2);
  const Case c{400, 6000, 24};  // 9.6 MB of C: streamed (from the L2 size, 8 MiB on AVX-512)
  const auto a = random_values(c.m * c.k, 8), b = random_values(c.k * c.n, 9);
  const auto want = reference(c, a, b);
  for (const F32GemmMicrokernel *kernel : supported_kernels())
    for (int64_t offset : {0, 1})
      for (int64_t ldc : {c.n, c.n + 3}) {
        std::vector<float> out(static_cast<size_t>(c.m * ldc + offset), NAN);
        sgemm(pool, c.m, c.n, c.k, StridedA(a.data(), c.k, false), StridedB(b.data(), c.n, false),
              out.data() + offset, ldc, {.kernel = kernel});
        std::vector<float> got(static_cast<size_t>(c.m * c.n));
        for (int64_t i = 0; i < c.m; ++i)
          std::copy_n(out.begin() + offset + i * ldc, c.n, got.begin() + i * c.n);
        expect_near(got, want, c,
                    std::string(kernel->name) + " offset " + std::to_string(offset) + " ldc " +
                        std::to_string(ldc));
      }
}

// The micro-kernels' store epilogue: clamp(C + row bias + column bias, lo, hi), on the last depth
// block only (after every product), over edge tiles and both threads; NaN passes the clamp.
TEST(Sgemm, StoreEpilogueAddsBiasesAndClampsAfterTheLastDepthBlock) {
  ThreadPool pool(2);
  for (const Case &c : {Case{29, 70, 600}, Case{13, 40, 1100}, Case{5, 9, 0}, Case{1, 70, 600}}) {
    auto a = random_values(c.m * c.k, 7), b = random_values(c.k * c.n, 8);
    if (c.k > 0 && c.m > 2) a[2 * c.k] = NAN;  // row 2 of C is NaN
    const auto want = reference(c, a, b);
    const auto row_bias = random_values(c.m, 9), col_bias = random_values(c.n, 10);
    const float lo = -0.5f, hi = 0.7f;
    for (const F32GemmMicrokernel *kernel : supported_kernels()) {
      const StridedB sb(b.data(), c.n, false);
      const PackedB pb(sb, c.k, c.n, *kernel);
      for (const GemmB *gb : {static_cast<const GemmB *>(&sb), static_cast<const GemmB *>(&pb)}) {
        for (bool rows : {false, true}) {
          const ukernels::TileEpilogue e{rows ? row_bias.data() : nullptr,
                                         rows ? nullptr : col_bias.data(), lo, hi};
          std::vector<float> out(static_cast<size_t>(c.m * c.n), NAN);
          sgemm(pool, c.m, c.n, c.k, StridedA(a.data(), c.k, false), *gb, out.data(), c.n,
                {.kernel = kernel, .epilogue = &e});
          for (int64_t i = 0; i < c.m; ++i)
            for (int64_t j = 0; j < c.n; ++j) {
              const double v = want[i * c.n + j] + (rows ? row_bias[i] : col_bias[j]);
              const float got = out[i * c.n + j];
              if (std::isnan(v)) {
                ASSERT_TRUE(std::isnan(got)) << kernel->name << " at " << i << "," << j;
              } else {
                ASSERT_NEAR(got, std::clamp(v, double(lo), double(hi)), 1e-5 * (1.0 + c.k))
                    << kernel->name << " k=" << c.k << " at " << i << "," << j;
              }
            }
        }
      }
    }
  }
}

// Grid columns: GEMM column t is kept when t % wp < width and lands at (t / wp) * width + t % wp
// of its row of C (a conv's padded grid); every kernel, several depth blocks, the epilogue, and
// grids narrower than a vector (wp 3) and wider than a tile (wp 45). C's other values stay.
TEST(Sgemm, GridColumnsStoreOnlyTheKeptColumnsPacked) {
  ThreadPool pool(2);
  struct GridCase {
    int64_t m, rows, wp, width, k;
  };
  for (const GridCase g : {GridCase{14, 5, 45, 41, 300}, GridCase{13, 7, 9, 7, 40},
                           GridCase{5, 11, 3, 1, 17}, GridCase{3, 4, 20, 20, 0},
                           // 8.6 MB of C: streamed through the staging block (a first conv).
                           GridCase{160, 120, 113, 112, 27}}) {
    const Case c{g.m, g.rows * g.wp, g.k};
    const auto a = random_values(c.m * c.k, 11), b = random_values(c.k * c.n, 12);
    const auto want = reference(c, a, b);
    const auto bias = random_values(c.m, 13);
    const int64_t ldc = g.rows * g.width + 3;  // 3 values past each row of C must stay
    for (const F32GemmMicrokernel *kernel : supported_kernels()) {
      for (bool with_epilogue : {false, true}) {
        const ukernels::TileEpilogue e{bias.data(), nullptr, -0.5f, 0.7f};
        const ukernels::GridColumns grid{g.wp, g.width, 0};
        std::vector<float> out(static_cast<size_t>(c.m * ldc), 9.0f);
        sgemm(pool, c.m, c.n, c.k, StridedA(a.data(), c.k, false), StridedB(b.data(), c.n, false),
              out.data(), ldc,
              {.kernel = kernel, .epilogue = with_epilogue ? &e : nullptr, .grid = &grid});
        for (int64_t i = 0; i < c.m; ++i) {
          for (int64_t t = 0; t < c.n; ++t) {
            if (t % g.wp >= g.width) continue;
            double v = want[i * c.n + t];
            if (with_epilogue) v = std::clamp(v + bias[i], -0.5, 0.7);
            ASSERT_NEAR(out[i * ldc + (t / g.wp) * g.width + t % g.wp], v, 1e-5 * (1.0 + c.k))
                << kernel->name << " wp=" << g.wp << " row " << i << " column " << t;
          }
          for (int64_t j = g.rows * g.width; j < ldc; ++j)
            ASSERT_EQ(out[i * ldc + j], 9.0f) << kernel->name << " wp=" << g.wp;
        }
      }
    }
  }
}

// A residual in the store epilogue (fused_conv's skip connection) is laid out like C: same ldc,
// and on a padded grid the same kept columns. clamp(C + row bias + residual) on the last depth
// block, for every kernel, plain and gridded, with C rows longer than the product.
TEST(Sgemm, StoreEpilogueAddsAResidualLaidOutLikeC) {
  ThreadPool pool(2);
  struct ResidualCase {
    int64_t m, rows, wp, width, k;  // wp == width: no grid
  };
  for (const ResidualCase r : {ResidualCase{29, 1, 70, 70, 600}, ResidualCase{13, 7, 9, 7, 40},
                               ResidualCase{14, 5, 45, 41, 300}}) {
    const bool gridded = r.wp != r.width;
    const Case c{r.m, r.rows * r.wp, r.k};
    const auto a = random_values(c.m * c.k, 21), b = random_values(c.k * c.n, 22);
    const auto want = reference(c, a, b);
    const auto bias = random_values(c.m, 23);
    const int64_t ldc = r.rows * r.width + 3;
    const auto residual = random_values(c.m * ldc, 24);
    for (const F32GemmMicrokernel *kernel : supported_kernels()) {
      const ukernels::TileEpilogue e{bias.data(), nullptr, -0.5f, 0.7f, residual.data()};
      const ukernels::GridColumns grid{r.wp, r.width, 0};
      std::vector<float> out(static_cast<size_t>(c.m * ldc), 9.0f);
      sgemm(pool, c.m, c.n, c.k, StridedA(a.data(), c.k, false), StridedB(b.data(), c.n, false),
            out.data(), ldc, {.kernel = kernel, .epilogue = &e, .grid = gridded ? &grid : nullptr});
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t t = 0; t < c.n; ++t) {
          if (t % r.wp >= r.width) continue;
          const int64_t at = i * ldc + (t / r.wp) * r.width + t % r.wp;
          const double v = std::clamp(want[i * c.n + t] + bias[i] + residual[at], -0.5, 0.7);
          ASSERT_NEAR(out[at], v, 1e-5 * (1.0 + c.k))
              << kernel->name << " wp=" << r.wp << " row " << i << " column " << t;
        }
        for (int64_t j = r.rows * r.width; j < ldc; ++j)
          ASSERT_EQ(out[i * ldc + j], 9.0f) << kernel->name << " wp=" << r.wp;
      }
    }
  }
}

TEST(Sgemm, FinishSeesEveryElementOnceAfterItsProduct) {
  ThreadPool pool(2);
  const Case c{250, 700, 600};  // several row, column and depth blocks; two threads
  const auto a = random_values(c.m * c.k, 5), b = random_values(c.k * c.n, 6);
  const auto want = reference(c, a, b);
  std::vector<float> out(static_cast<size_t>(c.m * c.n));
  std::vector<int> visits(out.size(), 0);
  // Doubling in the hook: a block finished before all its products are in would show.
  const GemmFinish finish = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    for (int64_t i = m0; i < m1; ++i)
      for (int64_t j = n0; j < n1; ++j) {
        out[i * c.n + j] *= 2;
        ++visits[i * c.n + j];
      }
  };
  sgemm(pool, c.m, c.n, c.k, StridedA(a.data(), c.k, false), StridedB(b.data(), c.n, false),
        out.data(), c.n, {.finish = &finish});
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(visits[i], 1) << i;
    ASSERT_NEAR(out[i], 2 * want[i], 2e-5 * (1 + c.k)) << i;
  }
}

}  // namespace
}  // namespace lumen::cpu
