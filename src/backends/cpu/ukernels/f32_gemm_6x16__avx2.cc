// 6 x 16 tile: 12 ymm accumulators, two B vectors and one broadcast A value per step (15 of the
// 16 ymm registers), so the two FMA pipes stay busy while loads stay under two per cycle.

#include "backends/cpu/ukernels/f32_gemm.h"
#include "core/cpu_isa.h"  // LUMEN_VEC_INLINE

// Built with this ISA's flags on x86-64 only; elsewhere the file is empty and the table in
// gemm/microkernel.cc never offers the kernel (its CPU check fails).
#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <new>

namespace lumen::ukernels {
namespace {

constexpr int kPanelRows = 6, kPanelCols = 16, kLanes = 8;

// No software prefetch in the k loop, unlike the AVX-512 kernel: on Zen 2, without prefetching A
// 128 steps and B 32 steps ahead, ResNet-50, BERT-base and a 1024 GEMM ran 4-5% faster (2 threads,
// against onnxruntime in the same runs); the hardware prefetchers follow the packed panels.

// Where the lanes of one 8-lane vector of a tile row land in a row of C: runs of consecutive
// lanes, lane L of run i going to c_row[offset + L]. Plain columns are one run; grid columns
// (f32_gemm.h) may split a vector where a grid row ends. No masked loads or stores: AMD's
// vmaskmovps store is microcoded (tens of cycles), so partial vectors go through a buffer.
struct LaneRun {
  int64_t offset;
  int first, count;
};
constexpr int kMaxRuns = kLanes;  // a grid row may be 1 column wide

struct VectorLanes {
  LaneRun runs[kMaxRuns];
  int count = 0;
  // One run of all 8 lanes: a plain unaligned load or store at c_row + offset.
  bool whole() const { return count == 1 && runs[0].count == kLanes; }
};

struct TileLanes {
  VectorLanes v[2];
};

// Plain columns: vector v holds columns [8v, min(8v + 8, n)).
TileLanes plain_lanes(int n) {
  TileLanes t;
  for (int v = 0; v < 2 && kLanes * v < n; ++v)
    t.v[v].runs[t.v[v].count++] = {kLanes * v, 0, std::min(kLanes, n - kLanes * v)};
  return t;
}

// Grid columns: the kept columns of each grid row are packed `width` to a row of C.
TileLanes grid_lanes(const GridColumns &g, int n) {
  TileLanes t;
  int64_t row = g.col0 / g.wp, col = g.col0 % g.wp;
  for (int lane = 0; lane < n;) {
    const int v = lane / kLanes, in_vector = lane % kLanes;
    const int span = std::min(n - lane, kLanes - in_vector);
    int step;
    if (col >= g.width) {  // dropped columns up to the end of the grid row
      step = static_cast<int>(std::min<int64_t>(g.wp - col, span));
    } else {
      step = static_cast<int>(std::min<int64_t>(g.width - col, span));
      t.v[v].runs[t.v[v].count++] = {row * g.width + col - in_vector, in_vector, step};
    }
    lane += step;
    col += step;
    if (col == g.wp) col = 0, ++row;
  }
  return t;
}

// The grid lanes of the tile, from the driver's cache when the last tile had the same columns
// (the GEMM walks each column tile's row panels one after another); `local` without a cache.
const TileLanes &cached_grid_lanes(const GridColumns &g, int n, TileLanes &local) {
  static_assert(sizeof(TileLanes) <= sizeof(GridLaneCache::data));
  if (!g.cache) return local = grid_lanes(g, n);
  GridLaneCache &c = *g.cache;
  if (c.col0 == g.col0 && c.wp == g.wp && c.width == g.width && c.n == n)
    return *std::launder(reinterpret_cast<const TileLanes *>(c.data));
  c.col0 = g.col0, c.wp = g.wp, c.width = g.width, c.n = n;
  return *new (c.data) TileLanes(grid_lanes(g, n));
}

// Vector v of a row laid out like C (a row of C or of the residual); lanes that do not land in C
// are zero.
inline __m256 load_lanes(const float *row, const VectorLanes &l) {
  if (l.whole()) return _mm256_loadu_ps(row + l.runs[0].offset);
  alignas(32) float buf[kLanes] = {};
  for (int i = 0; i < l.count; ++i)
    for (int lane = l.runs[i].first; lane < l.runs[i].first + l.runs[i].count; ++lane)
      buf[lane] = row[l.runs[i].offset + lane];
  return _mm256_load_ps(buf);
}

inline void store_lanes(float *row, const VectorLanes &l, __m256 value) {
  if (l.whole()) return _mm256_storeu_ps(row + l.runs[0].offset, value);
  alignas(32) float buf[kLanes];
  _mm256_store_ps(buf, value);
  for (int i = 0; i < l.count; ++i)
    for (int lane = l.runs[i].first; lane < l.runs[i].first + l.runs[i].count; ++lane)
      row[l.runs[i].offset + lane] = buf[lane];
}

// One k step of the full tile in assembly: A's 6 values at byte offset A_OFF, B's two vectors at
// B_OFF. From intrinsics GCC's allocator spilled 5 of the 12 accumulators on every step (15 of the
// 16 ymm registers are live): 43 instead of 91 GFLOP/s on one Zen 2 core.
// clang-format off
#define LUMEN_STEP_6X16(A_OFF, B_OFF)                   \
  "vmovaps " #B_OFF "(%[b]), %%ymm12\n\t"               \
  "vmovaps " #B_OFF "+32(%[b]), %%ymm13\n\t"            \
  "vbroadcastss " #A_OFF "(%[a]), %%ymm14\n\t"          \
  "vfmadd231ps %%ymm12, %%ymm14, %[c00]\n\t"            \
  "vfmadd231ps %%ymm13, %%ymm14, %[c01]\n\t"            \
  "vbroadcastss " #A_OFF "+4(%[a]), %%ymm14\n\t"        \
  "vfmadd231ps %%ymm12, %%ymm14, %[c10]\n\t"            \
  "vfmadd231ps %%ymm13, %%ymm14, %[c11]\n\t"            \
  "vbroadcastss " #A_OFF "+8(%[a]), %%ymm14\n\t"        \
  "vfmadd231ps %%ymm12, %%ymm14, %[c20]\n\t"            \
  "vfmadd231ps %%ymm13, %%ymm14, %[c21]\n\t"            \
  "vbroadcastss " #A_OFF "+12(%[a]), %%ymm14\n\t"       \
  "vfmadd231ps %%ymm12, %%ymm14, %[c30]\n\t"            \
  "vfmadd231ps %%ymm13, %%ymm14, %[c31]\n\t"            \
  "vbroadcastss " #A_OFF "+16(%[a]), %%ymm14\n\t"       \
  "vfmadd231ps %%ymm12, %%ymm14, %[c40]\n\t"            \
  "vfmadd231ps %%ymm13, %%ymm14, %[c41]\n\t"            \
  "vbroadcastss " #A_OFF "+20(%[a]), %%ymm14\n\t"       \
  "vfmadd231ps %%ymm12, %%ymm14, %[c50]\n\t"            \
  "vfmadd231ps %%ymm13, %%ymm14, %[c51]\n\t"
// clang-format on

// k / 2 double steps of the full 6 x 16 tile (a and b advance past them; an odd last step is
// left to the caller).
inline void full_tile_steps(int64_t k, const float *&a, const float *&b, __m256 (&acc)[6][2]) {
  int64_t pairs = k / 2;
  if (pairs == 0) return;
  asm("1:\n\t"
      LUMEN_STEP_6X16(0, 0)
      LUMEN_STEP_6X16(24, 64)
      "add $48, %[a]\n\t"
      "add $128, %[b]\n\t"
      "dec %[pairs]\n\t"
      "jnz 1b\n\t"
      : [a] "+r"(a), [b] "+r"(b), [pairs] "+r"(pairs),
        [c00] "+x"(acc[0][0]), [c01] "+x"(acc[0][1]), [c10] "+x"(acc[1][0]),
        [c11] "+x"(acc[1][1]), [c20] "+x"(acc[2][0]), [c21] "+x"(acc[2][1]),
        [c30] "+x"(acc[3][0]), [c31] "+x"(acc[3][1]), [c40] "+x"(acc[4][0]),
        [c41] "+x"(acc[4][1]), [c50] "+x"(acc[5][0]), [c51] "+x"(acc[5][1])
      :
      : "ymm12", "ymm13", "ymm14", "cc", "memory");
}
#undef LUMEN_STEP_6X16

// The tile with kRows of the panel's 6 rows and kVectors 8-wide column vectors: edge tiles
// compute only what they need (a 64-channel conv ends on 4 rows, a 7x7 map on 1 column).
template <int kRows, int kVectors>
void tile(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m, int n,
          TileStore store, const TileEpilogue *epilogue, const GridColumns *grid,
          L2PrefetchShare next) {
  const bool accumulate = store == TileStore::kAccumulate;
  // Whole vectors (most tiles) are plain loads and stores; partial tiles and grid columns go by
  // their lanes (building those cost as much as a 27-deep k loop).
  const bool whole = !grid && n == kLanes * kVectors;
  TileLanes plain;
  const TileLanes *lanes = whole  ? nullptr
                           : grid ? &cached_grid_lanes(*grid, n, plain)
                                  : &(plain = plain_lanes(n));
  const auto load_like_c = [&](const float *row, int v) {
    return whole ? _mm256_loadu_ps(row + kLanes * v) : load_lanes(row, lanes->v[v]);
  };
  // C (and a residual) is read only after the k loop: asking for its lines now hides their
  // latency behind the loop. (A C that is only written gains nothing from it.)
  const float *residual = epilogue ? epilogue->residual : nullptr;
  if (accumulate || residual) {
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r)
      for (int v = 0; v < kVectors; ++v)
        if (r < m && (whole || lanes->v[v].count)) {
          const LaneRun &run = whole ? LaneRun{kLanes * v, 0, kLanes} : lanes->v[v].runs[0];
          const int64_t at = r * ldc + run.offset + run.first;
          if (accumulate) _mm_prefetch(reinterpret_cast<const char *>(c + at), _MM_HINT_T0);
          if (residual) _mm_prefetch(reinterpret_cast<const char *>(residual + at), _MM_HINT_T0);
        }
  }
  __m256 acc[kRows][kVectors];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm256_setzero_ps();
  if constexpr (kRows == 6 && kVectors == 2) {
    // The assembly loop runs in chunks, the next share prefetched between them.
    constexpr int64_t kChunk = 32;
    next.spread(k / kChunk + 1);
    for (; k >= kChunk; k -= kChunk) {
      next.step();
      full_tile_steps(kChunk, a, b, acc);
    }
    next.step();
    full_tile_steps(k, a, b, acc);
    k &= 1;
  } else {
    next.spread(k);
  }
  for (int64_t p = 0; p < k; ++p, a += kPanelRows, b += kPanelCols) {
    next.step();
    __m256 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm256_load_ps(b + kLanes * v);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  // Each step of the store is one unrolled pass over the tile behind one branch: testing every
  // option per vector cost as many instructions as a 27-deep k loop. Rows past m are computed but
  // never loaded or stored.
  const auto each = [&](auto &&f) LUMEN_VEC_INLINE {
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v)
        if (r < m) f(r, v, acc[r][v]);
  };
  if (accumulate)
    each([&](int r, int v, __m256 &x) { x = _mm256_add_ps(x, load_like_c(c + r * ldc, v)); });
  if (epilogue) {
    // The additions in the unfused order, then x < lo ? lo : x and x > hi ? hi : x, which keep
    // NaN: vmaxps(lo, x) and vminps(hi, x) return their second operand when either is NaN. An
    // infinite bound (relu's hi) costs nothing.
    if (const float *rb = epilogue->row_bias)
      each([&](int r, int, __m256 &x) { x = _mm256_add_ps(x, _mm256_set1_ps(rb[r])); });
    if (const float *cb = epilogue->col_bias) {
      __m256 col_bias[kVectors];
      for (int v = 0; v < kVectors; ++v)
        col_bias[v] =
            whole ? _mm256_loadu_ps(cb + kLanes * v) : load_lanes(cb, plain_lanes(n).v[v]);
      each([&](int, int v, __m256 &x) { x = _mm256_add_ps(x, col_bias[v]); });
    }
    if (residual)
      each([&](int r, int v, __m256 &x) {
        x = _mm256_add_ps(x, load_like_c(residual + r * ldc, v));
      });
    if (epilogue->lo > -std::numeric_limits<float>::infinity()) {
      const __m256 lo = _mm256_set1_ps(epilogue->lo);
      each([&](int, int, __m256 &x) { x = _mm256_max_ps(lo, x); });
    }
    if (epilogue->hi < std::numeric_limits<float>::infinity()) {
      const __m256 hi = _mm256_set1_ps(epilogue->hi);
      each([&](int, int, __m256 &x) { x = _mm256_min_ps(hi, x); });
    }
  }
  // Streaming: whole rows of aligned vectors only (a tile row is one 64-byte line when C is
  // line-aligned, which the write-combining buffers send out whole).
  if (whole && store == TileStore::kStream && reinterpret_cast<uintptr_t>(c) % 32 == 0 &&
      ldc % kLanes == 0)
    each([&](int r, int v, __m256 &x) { _mm256_stream_ps(c + r * ldc + kLanes * v, x); });
  else if (whole)
    each([&](int r, int v, __m256 &x) { _mm256_storeu_ps(c + r * ldc + kLanes * v, x); });
  else
    each([&](int r, int v, __m256 &x) { store_lanes(c + r * ldc, lanes->v[v], x); });
}

}  // namespace

void f32_gemm_6x16__avx2(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                         int n, TileStore store, const TileEpilogue *e, const GridColumns *g,
                         L2PrefetchShare next) {
  if (n <= kLanes) {
    if (m <= 2) return tile<2, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
    if (m <= 4) return tile<4, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
    return tile<6, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
  }
  if (m <= 2) return tile<2, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
  if (m <= 4) return tile<4, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
  tile<6, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
