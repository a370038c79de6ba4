// 12 x 32 tile: 24 zmm accumulators, two B vectors and one broadcast A value per step, so the
// two FMA ports stay busy while loads stay under two per cycle.

#include "backends/cpu/ukernels/f32_gemm.h"

// Built with this ISA's flags on x86-64 only; elsewhere the file is empty and the table in
// gemm/microkernel.cc never offers the kernel (its CPU check fails).
#if defined(__AVX512F__)
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "backends/cpu/ukernels/avx512_lanes.h"

namespace lumen::ukernels {
namespace {

// Grid columns (see f32_gemm.h): the lanes of a 16-column vector of the tile that land in C, as
// runs stored with one masked store each: lane L of the vector goes to c_row[offset + L].
struct GridRun {
  int64_t offset;
  __mmask16 lanes;
};
constexpr int kMaxGridRuns = 16;  // a grid row may be 1 column wide

// How far ahead of the A value in use the k loop asks for A: 128 steps, half of a 256-deep panel,
// so the next panel (A's panels of a depth block lie one after another) is in L1 when its tile
// starts. Constant weights stream from memory (ResNet-50: 100 MB per inference) and the hardware
// prefetchers alone left the FMAs waiting: ten 1x1 convs of 4 MiB weights each on a 7x7 map ran
// 1.65x onnxruntime's time without this, 1.1x with it. Prefetches past the end never fault.
constexpr int64_t kAPrefetchFloats = 1536;
// A packed B panel (a MatMul's weights, 340 MB per BERT-base inference) streams from memory the
// same way for the first tile of its column: ask for it 64 steps (8 KiB) ahead. 2 threads,
// lumen/onnxruntime: BERT-base 0.97-0.99 -> 0.88-0.93, the 20-layer MLP 0.87-0.90 -> 0.75-0.82,
// a 4096 GEMM 80.5% -> 82-87% of peak.
constexpr int64_t kBPrefetchSteps = 64;

// The runs of every vector of a tile n columns wide; one division per tile (this runs once per
// tile and depth block). n <= 16 times the vectors of `runs`.
// first[v]: where the first run of vector v starts in a row of C.
void grid_runs(const GridColumns &g, int n, GridRun (*runs)[kMaxGridRuns], int *run_count,
               int64_t *first) {
  int64_t row = g.col0 / g.wp, col = g.col0 % g.wp;
  for (int lane = 0; lane < n;) {
    const int v = lane / 16, in_vector = lane % 16;
    const int64_t span = std::min(n - lane, 16 - in_vector);  // within this vector
    int step;
    if (col >= g.width) {  // dropped columns up to the end of the grid row
      step = static_cast<int>(std::min(g.wp - col, span));
    } else {
      step = static_cast<int>(std::min(g.width - col, span));
      if (run_count[v] == 0) first[v] = row * g.width + col;
      runs[v][run_count[v]++] = {row * g.width + col - in_vector,
                                 __mmask16(((1u << step) - 1) << in_vector)};
    }
    lane += step;
    col += step;
    if (col == g.wp) col = 0, ++row;
  }
}

// The grid runs of a tile's (up to two) vectors.
struct TileGridRuns {
  GridRun runs[2][kMaxGridRuns];
  int count[2];
  int64_t first[2];
};

// The GEMM walks each column tile's row panels one after another, all with the same runs, so each
// thread keeps the last tile's (recomputing them was 1-2% of SqueezeNet's time).
const TileGridRuns &tile_grid_runs(const GridColumns &g, int n) {
  thread_local GridColumns key{0, 0, -1};
  thread_local int key_n = -1;
  thread_local TileGridRuns cached;
  if (key.col0 != g.col0 || key.wp != g.wp || key.width != g.width || key_n != n) {
    cached.count[0] = cached.count[1] = 0;
    cached.first[0] = 0, cached.first[1] = 16;
    grid_runs(g, n, cached.runs, cached.count, cached.first);
    key = g;
    key_n = n;
  }
  return cached;
}

// The tile with kRows of the panel's 12 rows and kVectors 16-wide column vectors: edge tiles
// compute only what they need, which matters for narrow outputs (7x7 feature maps: 16 columns
// left) and for row counts that are not multiples of 12 (a 64-channel conv ends on 4 rows).
template <int kRows, int kVectors>
void tile(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m, int n,
          TileStore store, const TileEpilogue *epilogue, const GridColumns *grid,
          L2PrefetchShare next) {
  const bool accumulate = store == TileStore::kAccumulate;
  // Streaming stores for whole vectors of line-aligned rows (see TileStore).
  const bool stream = store == TileStore::kStream && !grid &&
                      reinterpret_cast<uintptr_t>(c) % 64 == 0 && ldc % 16 == 0;
  constexpr int kPanelRows = 12;
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) mask[v] = first_lanes(n - 16 * v);
  const TileGridRuns *tile_runs = grid ? &tile_grid_runs(*grid, n) : nullptr;
  int64_t row_start[kVectors];  // where vector v of a row of C starts, to prefetch
  for (int v = 0; v < kVectors; ++v) row_start[v] = tile_runs ? tile_runs->first[v] : 16 * v;
  // The C tile (and a residual) is read or written only after the k loop; asking for its lines
  // now hides their latency behind the loop (C is often far out of cache: a 4096 GEMM reloads
  // 64 MiB of C per depth block, and waiting for it cost ~12% of the time).
  const float *residual = epilogue ? epilogue->residual : nullptr;
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v)
      if (r < m) {
        _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + row_start[v]), _MM_HINT_T0);
        if (residual)
          _mm_prefetch(reinterpret_cast<const char *>(residual + r * ldc + row_start[v]),
                       _MM_HINT_T0);
      }
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  next.spread(k);
  for (int64_t p = 0; p < k; ++p, a += kPanelRows, b += 32) {
    next.step();
    _mm_prefetch(reinterpret_cast<const char *>(a + kAPrefetchFloats), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(b + 32 * kBPrefetchSteps), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(b + 32 * kBPrefetchSteps + 16), _MM_HINT_T0);
    __m512 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  __m512 col_bias[kVectors], lo = _mm512_setzero_ps(), hi = lo;
  for (int v = 0; v < kVectors; ++v) col_bias[v] = _mm512_setzero_ps();
  if (epilogue) {
    lo = _mm512_set1_ps(epilogue->lo), hi = _mm512_set1_ps(epilogue->hi);
    if (epilogue->col_bias)
      for (int v = 0; v < kVectors; ++v)
        col_bias[v] = _mm512_maskz_loadu_ps(mask[v], epilogue->col_bias + 16 * v);
  }
  // Vector v of a row laid out like C (row r of C or of the residual): its grid runs, or its
  // columns.
  const auto load_like_c = [&](const float *row, int v) {
    if (!grid) return _mm512_maskz_loadu_ps(mask[v], row + 16 * v);
    __m512 out = _mm512_setzero_ps();
    for (int i = 0; i < tile_runs->count[v]; ++i)
      out = _mm512_mask_loadu_ps(out, tile_runs->runs[v][i].lanes,
                                 row + tile_runs->runs[v][i].offset);
    return out;
  };
  // The additions in the unfused order, then x < lo ? lo : x and x > hi ? hi : x, which leave
  // NaN as it is: vmaxps(lo, x) is lo > x ? lo : x and vminps(hi, x) is hi < x ? hi : x (both
  // return their second operand when either is NaN), one instruction each, and an infinite bound
  // (relu's hi) costs none. (The maskz forms keep GCC 12 from warning about an undefined
  // pass-through operand.)
  const bool clamp_lo = epilogue && epilogue->lo > -std::numeric_limits<float>::infinity();
  const bool clamp_hi = epilogue && epilogue->hi < std::numeric_limits<float>::infinity();
  const auto finish = [&](__m512 out, int r, int v) {
    if (epilogue->row_bias) out = _mm512_add_ps(out, _mm512_set1_ps(epilogue->row_bias[r]));
    if (epilogue->col_bias) out = _mm512_add_ps(out, col_bias[v]);
    if (epilogue->residual) out = _mm512_add_ps(out, load_like_c(epilogue->residual + r * ldc, v));
    if (clamp_lo) out = _mm512_maskz_max_ps(__mmask16(0xFFFF), lo, out);
    if (clamp_hi) out = _mm512_maskz_min_ps(__mmask16(0xFFFF), hi, out);
    return out;
  };
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    if (r >= m) break;
    float *cr = c + r * ldc;
    // Unrolled like the row loop, so acc is indexed by constants and stays in registers (a loop
    // here kept it in memory, spilled on every k step: 2x slower).
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) {
      __m512 out = acc[r][v];
      if (accumulate) out = _mm512_add_ps(out, load_like_c(cr, v));
      if (epilogue) out = finish(out, r, v);
      if (!grid) {
        if (stream && mask[v] == __mmask16(0xFFFF))
          _mm512_stream_ps(cr + 16 * v, out);
        else
          _mm512_mask_storeu_ps(cr + 16 * v, mask[v], out);
        continue;
      }
      for (int i = 0; i < tile_runs->count[v]; ++i)
        _mm512_mask_storeu_ps(cr + tile_runs->runs[v][i].offset, tile_runs->runs[v][i].lanes, out);
    }
  }
}

}  // namespace

void f32_gemm_12x32__avx512(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m,
                            int n, TileStore store, const TileEpilogue *e, const GridColumns *g,
                            L2PrefetchShare next) {
  // One row (a matrix-vector product, which streams B from memory): a tile of 4 rows spent
  // 4 broadcasts and 8 FMAs per step on one row's 2 (1 x 4096 x 4096, 2 threads: 0.92x the time).
  if (m == 1) {
    if (n <= 16) return tile<1, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
    return tile<1, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
  }
  if (n <= 16) {
    if (m <= 4) return tile<4, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
    if (m <= 8) return tile<8, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
    return tile<12, 1>(k, a, b, c, ldc, m, n, store, e, g, next);
  }
  if (m <= 4) return tile<4, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
  if (m <= 8) return tile<8, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
  tile<12, 2>(k, a, b, c, ldc, m, n, store, e, g, next);
}

}  // namespace lumen::ukernels

#endif  // __AVX512F__
