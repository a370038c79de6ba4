#include "backends/cpu/gemm/sgemm.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <span>

#include <unistd.h>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "backends/cpu/ukernels/f32_pack.h"
#include "core/cpu_isa.h"
#include "lumen/error.h"

namespace lumen::cpu {
namespace {

// Cache blocking (Goto): a kc x nr micro-panel of B (32 KiB) stays in L1 while the micro-kernel
// walks the mc x kc block of A (384 KiB) in L2. The kc x nc block of B is packed once per (n, k)
// block and the A block once per (n, k, m) block: nc = 512 keeps the B block in L2 too (512 KiB),
// which pays off when A has few rows (convs with 64-128 output channels); a large plain A is
// repacked for every nc block, so it gets a wide nc (B then lives in L3).
constexpr int64_t kDepthBlock = 256;  // kc, at most
// A prepacked B (a MatMul's weights) is only streamed: no per-thread B block has to stay in L2,
// so its depth blocks go four times as deep (B micro-panels stream from L2/L3 in order, which the
// prefetchers follow), which quarters the passes over C: a 4096 GEMM reloads all 64 MiB of C
// once per depth block (1 thread: 68% of peak at 256, 86% at 512, 94% at 1024).
constexpr int64_t kStreamedDepthBlock = 1024;
// The deepest block of a matrix-vector product (its A panel: 12 x 16384 floats, 768 KiB).
constexpr int64_t kMaxVectorDepth = 16384;
int64_t round_up(int64_t v, int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}
// Blocks of at most about `most` (rounded up to a multiple of `multiple`) covering `extent`, as
// few as that allows and all the same size: a depth of 288 runs as 2 x 144, not 256 + a 32-step
// block that hardly amortizes its C tile; a thread's 516 rows as 2 x 264, not 384 + 132 rows that
// reuse each B micro-panel a third as often.
int64_t even_block(int64_t extent, int64_t most, int64_t multiple) {
  const int64_t blocks = std::max<int64_t>(1, (extent + most - 1) / most);
  const int64_t size = (extent + blocks - 1) / blocks;
  return round_up(size, multiple);
}
int64_t depth_block(int64_t k, int64_t most) {
  return even_block(k, most, 1);
}
// mc: at most 384 rows, fewer for deep blocks so the packed A block stays within ~768 KiB of L2.
constexpr int64_t kRowBlock = 384;
constexpr int64_t kRowBlockFloats = 192 * 1024;
int64_t column_block(int64_t rows, bool a_prepacked) {  // nc, a multiple of every nr
  return a_prepacked || rows <= 1024 ? 512 : 4096;
}
// A C of at least a core's L2 (sysconf; 512 KiB if unknown), written in one pass with no finish
// hook reading it back, is stored with streaming stores (ukernels::TileStore): it cannot stay in
// the writer's L2 anyway, and plain stores first read every line of it from memory. MobileNetV2's
// 1x1 expand convs (1.8-4.8 MB outputs), 2 threads: the model 8.76 -> 8.04 ms
// (onnxruntime 6.1-6.4); streaming from 256 KiB was no better, and from 1 MiB kept half the gain.
// Zen 2, 512 KiB L2, AVX2. On Zen 4 (AVX-512, 1 MiB L2, 32 MiB L3) the next op reading such a C
// from L3 beat the stores saved, up to outputs of 8 MiB (VGG's 12.8 MB still stream): in-process
// A/B at 2 threads, MobileNetV2 0.93x the time, ResNet-50 0.97x, ZFNet 0.98x, VGG-19 1.00x.
// The ISA stands for the machine here: only those two were measured.
double stream_bytes() {
  static const double bytes = [] {
    long l2 = -1;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    const double l2_bytes = l2 > 0 ? double(l2) : 512.0 * 1024;
    constexpr double kAvx512StreamBytes = 8.0 * 1024 * 1024;
    return vec::cpu_isa() == vec::Isa::Avx512 ? std::max(l2_bytes, kAvx512StreamBytes) : l2_bytes;
  }();
  return bytes;
}
// The finish hook gets blocks of about mc x 256 (L2-sized) right after their last product.
constexpr int64_t kFinishColumns = 256;
constexpr double kMinMacsPerThread = 128.0 * 1024.0;
// What a shared operand may take of L3 (32 MiB on the 2-core machines this was tuned on) and
// still be read by every thread's chunks from there.
constexpr double kSharedOperandCachedBytes = 8.0 * 1024 * 1024;

// A streamed C whose rows are not aligned vectors (grid columns, odd row lengths) goes through a
// staging block of about this many floats per thread (128 KiB, in L2), which is copied out with
// streaming stores: SqueezeNet's first conv (3.2 MB of 111-wide output rows) spent as long on its
// stores as on its products.
constexpr int64_t kStageFloats = 32 * 1024;

// dst[0, n) = src[0, n): the whole 64-byte lines of dst with streaming stores, the partial lines
// at either end with plain ones (a line written both ways is flushed from the write-combining
// buffer early and read back: copying 55-float rows that way ran slower than plain stores).
void stream_copy(float *dst, const float *src, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  const int64_t head =
      std::min<int64_t>(n, ((64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64) / 4);
  for (; i < head; ++i) dst[i] = src[i];
  for (; i + 16 <= n; i += 16)
    for (int64_t q = 0; q < 16; q += 4) _mm_stream_ps(dst + i + q, _mm_loadu_ps(src + i + q));
#endif
  for (; i < n; ++i) dst[i] = src[i];
}

// Rows [0, rows) of a staging block (row stride ld) holding GEMM columns [col0, col0 + cols) into
// C (c: its first row), through the grid columns if C has them: they land on one contiguous range
// of each row, gathered in `packed` (cols floats) first so it is streamed in one piece.
void copy_out(const float *stage, int64_t ld, int64_t rows, int64_t col0, int64_t cols, float *c,
              int64_t ldc, const ukernels::GridColumns *grid, float *packed) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *src = stage + r * ld;
    float *row = c + r * ldc;
    if (!grid) {
      stream_copy(row + col0, src, cols);
      continue;
    }
    float *out = packed;
    for (int64_t t = col0; t < col0 + cols;) {
      const int64_t grid_row = t / grid->wp, col = t % grid->wp;
      const int64_t end = std::min(col0 + cols, grid_row * grid->wp + grid->width);
      if (col < grid->width) {
        std::memcpy(out, src + (t - col0), static_cast<size_t>(end - t) * sizeof(float));
        out += end - t;
      }
      t = col < grid->width ? end : (grid_row + 1) * grid->wp;
    }
    stream_copy(row + ukernels::kept_before(*grid, col0), packed, out - packed);
  }
}

// Orders this thread's streaming stores before its later stores (the thread pool's completion
// flag among them), so whoever reads C after the GEMM sees them.
void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

std::shared_ptr<float[]> aligned_floats(size_t count) {
  constexpr std::align_val_t kAlign{64};
  float *p =
      static_cast<float *>(::operator new[](std::max<size_t>(count, 1) * sizeof(float), kAlign));
  return std::shared_ptr<float[]>(p, [](float *q) { ::operator delete[](q, kAlign); });
}

// Per-thread packing buffers, grown on demand and kept: a warm GEMM allocates nothing.
struct Workspace {
  std::shared_ptr<float[]> a, b, shared_b, stage;
  size_t a_size = 0, b_size = 0, shared_b_size = 0, stage_size = 0;
  float *a_buffer(size_t count) { return grow(a, a_size, count); }
  float *stage_buffer(size_t count) { return grow(stage, stage_size, count); }
  float *b_buffer(size_t count) { return grow(b, b_size, count); }
  // All of B packed by every thread together (see SharedPackedB), in the calling thread's.
  float *shared_b_buffer(size_t count) { return grow(shared_b, shared_b_size, count); }

 private:
  static float *grow(std::shared_ptr<float[]> &buf, size_t &size, size_t count) {
    if (count > size) {
      buf = aligned_floats(count);
      size = count;
    }
    return buf.get();
  }
};

Workspace &thread_workspace() {
  thread_local Workspace workspace;
  return workspace;
}

#if defined(__x86_64__) && defined(__GNUC__)
// Whether the AVX-512 packing kernels (ukernels/f32_pack.h) may run: the CPU's ISA, capped by
// LUMEN_CPU_ISA like the micro-kernels.
bool avx512_cpu() {
  static const bool avx512 = vec::cpu_isa() == vec::Isa::Avx512;
  return avx512;
}
bool avx2_cpu() {
  static const bool avx2 = vec::cpu_isa() >= vec::Isa::Avx2;
  return avx2;
}
#endif

// One step of a packed panel whose values are contiguous in the source: `count` of them, then
// zeros up to the panel width.
void copy_step(float *dst, const float *src, int64_t count, int width) {
  std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
  std::fill(dst + count, dst + width, 0.0f);
}

// The panels of depth range [k0, k0 + kc) starting at panel `first`, from an operand packed in
// depth blocks of `depth`: any range within one packed block.
PanelBlock packed_block(const float *data, int64_t extent, int64_t k, int width, int64_t depth,
                        int64_t first, int64_t k0, int64_t kc) {
  const int64_t block_k0 = k0 - k0 % depth, block_kc = std::min(depth, k - block_k0);
  if (kc <= 0 || k0 + kc > block_k0 + block_kc)
    fail("packed GEMM operand: depth range [", k0, ", ", k0 + kc, ") crosses the blocks of ", depth,
         " it was packed in");
  const int64_t panels = (extent + width - 1) / width;
  return {data + block_k0 * panels * width + first * block_kc * width + (k0 - block_k0) * width,
          block_kc * width};
}

// Packs the panels of columns (or rows) [n0, n0 + nc) over depths [k0, k0 + kc) into dst, one
// after another; a source that hands out a view of panels it already holds is copied from there.
template <class Source>
void pack_into(const Source &source, int64_t n0, int64_t nc, int64_t k0, int64_t kc, int width,
               float *dst) {
  const PanelBlock block = source.panels(n0, nc, k0, kc, width, dst);
  const int64_t panels = (nc + width - 1) / width;
  if (block.data != dst)
    std::memcpy(dst, block.data, static_cast<size_t>(panels * kc * width) * sizeof(float));
}

// B packed whole, panel by panel over the whole depth (PackedB's layout), by all the threads of a
// row-split GEMM together: each then streams it, instead of every thread packing all of B itself
// (SqueezeNet's 13x13 3x3 convs, 2 threads: both gathered the whole 576-deep im2col matrix).
class SharedPackedB final : public GemmB {
 public:
  SharedPackedB(ThreadPool &pool, const GemmB &source, int64_t k, int64_t n, int nr, float *data)
      : k_(k), n_(n), nr_(nr), data_(data) {
    const int64_t panels = (n + nr - 1) / nr;
    pool.parallel_for(panels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j)
        pack_into(source, j * nr, std::min<int64_t>(nr, n - j * nr), 0, k, nr, data + j * k * nr);
    });
  }
  PanelBlock panels(int64_t n0, int64_t, int64_t k0, int64_t kc, int, float *) const override {
    return packed_block(data_, n_, k_, nr_, k_, n0 / nr_, k0, kc);
  }
  bool prepacked() const override { return true; }

 private:
  int64_t k_, n_;
  int nr_;
  const float *data_;
};

// One thread's share of C: rows [m_begin, m_end) x columns [n_begin, n_end).
void sgemm_region(int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end, int64_t k,
                  const GemmA &a, const GemmB &b, float *c, int64_t ldc, const GemmOptions &options,
                  const F32GemmMicrokernel &uk) {
  if (m_begin >= m_end || n_begin >= n_end) return;
  const ukernels::TileEpilogue *epilogue = options.epilogue;
  // Where tile column `col` starts in a row of C, and its grid columns if C is a grid.
  const auto c_column = [&](int64_t col) { return options.grid ? 0 : col; };
  // The epilogue of the tile at (row, col).
  const auto tile_epilogue = [&](int64_t row, int64_t col) {
    return ukernels::TileEpilogue{
        epilogue->row_bias ? epilogue->row_bias + row : nullptr,
        epilogue->col_bias ? epilogue->col_bias + col : nullptr, epilogue->lo, epilogue->hi,
        epilogue->residual ? epilogue->residual + row * ldc + c_column(col) : nullptr};
  };
  ukernels::GridLaneCache grid_cache;
  const auto tile_grid = [&](int64_t col) {
    return options.grid
               ? ukernels::GridColumns{options.grid->wp, options.grid->width, col, &grid_cache}
               : ukernels::GridColumns{};
  };
  if (k == 0) {  // C = 0 (or left), through the epilogue, a row segment of up to 64 at a time
    constexpr int kSegment = 64;
    const float zeros[kSegment] = {};
    for (int64_t i = m_begin; i < m_end; ++i)
      for (int64_t j = n_begin; j < n_end; j += kSegment) {
        const ukernels::TileEpilogue te = epilogue ? tile_epilogue(i, j) : ukernels::TileEpilogue{};
        const ukernels::GridColumns g = tile_grid(j);
        ukernels::store_tile(
            zeros, 0, c + i * ldc + c_column(j), ldc, 1,
            static_cast<int>(std::min<int64_t>(kSegment, n_end - j)),
            options.accumulate ? ukernels::TileStore::kAccumulate : ukernels::TileStore::kOverwrite,
            epilogue ? &te : nullptr, options.grid ? &g : nullptr);
      }
    if (options.finish) (*options.finish)(m_begin, m_end, n_begin, n_end);
    return;
  }
  const int64_t mr = uk.mr, nr = uk.nr;
  // Deep blocks for a streamed B, unless A is prepacked (PackedA holds blocks of kDepthBlock); the
  // whole depth where A is one row panel (a matrix-vector product: each panel of B, contiguous
  // over the whole depth in PackedB, then streams in one pass; 1 x 4096 x 4096, 2 threads:
  // 1.13-1.18x onnxruntime's time -> 0.92-1.00 with the one-row tile).
  const bool one_row_panel = b.prepacked() && !a.prepacked() && m_end - m_begin <= mr;
  const int64_t depth = one_row_panel && k <= kMaxVectorDepth
                            ? k
                            : depth_block(k, b.prepacked() && !a.prepacked() ? kStreamedDepthBlock
                                                                            : kDepthBlock);
  const int64_t row_block =
      even_block(m_end - m_begin, std::clamp<int64_t>(kRowBlockFloats / depth, mr, kRowBlock), mr);
  // One row block reads each block of a prepacked B once, however wide, while each column block
  // packs A again: then one column block (a 128-token BERT layer's 768 -> 3072 MatMul: 4% less
  // time at 1 thread, 2% at 2).
  const bool one_column_block = b.prepacked() && !a.prepacked() && m_end - m_begin <= row_block;
  const int64_t col_block =
      one_column_block
          ? round_up(n_end - n_begin, nr)
          : even_block(n_end - n_begin, column_block(m_end - m_begin, a.prepacked()), nr);
  Workspace &ws = thread_workspace();
  float *a_buffer = a.prepacked()
                        ? nullptr
                        : ws.a_buffer(static_cast<size_t>(
                              round_up(std::min(row_block, m_end - m_begin), mr) * depth));
  float *b_buffer = b.prepacked()
                        ? nullptr
                        : ws.b_buffer(static_cast<size_t>(
                              round_up(std::min(col_block, n_end - n_begin), nr) * depth));
  // Streamed tiles that cannot be streamed in place (see kStageFloats) are staged instead; a
  // residual, read in C's layout by the tiles, keeps them in place.
  const bool staged = options.stream && !(epilogue && epilogue->residual) &&
                      (options.grid || ldc % 16 != 0 || reinterpret_cast<uintptr_t>(c) % 64 != 0);
  const int64_t stage_cols = std::clamp<int64_t>(kStageFloats / round_up(row_block, mr) / nr * nr,
                                                 nr, round_up(col_block, nr));
  float *stage =
      staged ? ws.stage_buffer(static_cast<size_t>((round_up(row_block, mr) + 1) * stage_cols))
             : nullptr;
  // The prepacked B panel read after panel j of block (n0, k0): the block's next panel, or the
  // next block's first (the same block's for another row block), prefetched into L2 by the tiles
  // of panel j, each its share (see ukernels::L2PrefetchShare): the weights of a MatMul stream
  // from memory once per run, and the first tile of a panel read them at the tile's pace.
  // None for a B packed here (it is in this core's caches already).
  const auto next_b_panel = [&](int64_t n0, int64_t nc, int64_t k0, int64_t kc,
                                const PanelBlock &bp, int64_t j,
                                bool last_rows) -> std::span<const float> {
    const auto panel = [&](int64_t n_at, int64_t n_count, int64_t k_at, int64_t k_count) {
      return std::span(b.panels(n_at, n_count, k_at, k_count, nr, nullptr).data,
                       static_cast<size_t>(k_count * nr));
    };
    if (!b.prepacked()) return {};
    if ((j + 1) * nr < nc)
      return std::span(bp.data + (j + 1) * bp.panel_stride, static_cast<size_t>(kc * nr));
    if (!last_rows) return std::span(bp.data, static_cast<size_t>(kc * nr));
    if (k0 + kc < k) return panel(n0, nc, k0 + kc, std::min(depth, k - k0 - kc));
    if (n0 + nc < n_end)
      return panel(n0 + nc, std::min(col_block, n_end - n0 - nc), 0, std::min(depth, k));
    return {};
  };
  for (int64_t n0 = n_begin; n0 < n_end; n0 += col_block) {
    const int64_t nc = std::min(col_block, n_end - n0);
    for (int64_t k0 = 0; k0 < k; k0 += depth) {
      const int64_t kc = std::min(depth, k - k0);
      const bool accumulate = options.accumulate || k0 > 0;
      // Streaming only where each value of C is stored once: a single depth block.
      const ukernels::TileStore store = accumulate ? ukernels::TileStore::kAccumulate
                                        : options.stream && kc == k
                                            ? ukernels::TileStore::kStream
                                            : ukernels::TileStore::kOverwrite;
      const PanelBlock bp = b.panels(n0, nc, k0, kc, uk.nr, b_buffer);
      for (int64_t m0 = m_begin; m0 < m_end; m0 += row_block) {
        const int64_t mc = std::min(row_block, m_end - m0);
        const PanelBlock ap = a.panels(m0, mc, k0, kc, uk.mr, a_buffer);
        const bool last = k0 + kc >= k;  // the depth block that completes C
        const bool finish = options.finish && last;
        int64_t unfinished = 0;  // first column not yet handed to the finish hook
        // Staging: tiles overwrite the stage (columns from staged_from on), copied out in batches.
        const bool to_stage = staged && store == ukernels::TileStore::kStream;
        const ukernels::TileStore tile_store = to_stage ? ukernels::TileStore::kOverwrite : store;
        const int64_t tile_ldc = to_stage ? stage_cols : ldc;
        int64_t staged_from = 0;
        for (int64_t j = 0; j * nr < nc; ++j) {
          const int64_t col_end = std::min(nc, (j + 1) * nr);
          const std::span<const float> next_b =
              next_b_panel(n0, nc, k0, kc, bp, j, m0 + mc >= m_end);
          const int64_t tiles = (mc + mr - 1) / mr;
          float *c_col = to_stage ? stage + (j * nr - staged_from) : c + c_column(n0 + j * nr);
          const ukernels::GridColumns grid = tile_grid(n0 + j * nr);
          const ukernels::GridColumns *tile_g = options.grid && !to_stage ? &grid : nullptr;
          const int cols = static_cast<int>(col_end - j * nr);
          for (int64_t i = 0; i * mr < mc; ++i) {
            const float *a_panel = ap.data + i * ap.panel_stride;
            float *c_tile = c_col + (to_stage ? i * mr : m0 + i * mr) * tile_ldc;
            const int rows = static_cast<int>(std::min(mr, mc - i * mr));
            const ukernels::TileEpilogue te = last && epilogue
                                                  ? tile_epilogue(m0 + i * mr, n0 + j * nr)
                                                  : ukernels::TileEpilogue{};
            const ukernels::TileEpilogue *tile_e = last && epilogue ? &te : nullptr;
            const ukernels::L2PrefetchShare next(next_b.data(), int64_t(next_b.size_bytes()), i, 1,
                                                 tiles);
            uk.run(kc, a_panel, bp.data + j * bp.panel_stride, c_tile, tile_ldc, rows, cols,
                   tile_store, tile_e, tile_g, next);
          }
          if (to_stage && (col_end - staged_from >= stage_cols || col_end == nc)) {
            copy_out(stage, stage_cols, mc, n0 + staged_from, col_end - staged_from, c + m0 * ldc,
                     ldc, options.grid ? &grid : nullptr,
                     stage + round_up(row_block, mr) * stage_cols);
            staged_from = col_end;
          }
          if (finish && (col_end - unfinished >= kFinishColumns || col_end == nc)) {
            (*options.finish)(m0, m0 + mc, n0 + unfinished, n0 + col_end);
            unfinished = col_end;
          }
        }
      }
    }
  }
  if (options.stream) stream_fence();
}

}  // namespace

PanelBlock StridedA::panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                            float *buffer) const {
  for (int64_t i = 0; i * mr < mc; ++i) {
    const int64_t r0 = m0 + i * mr;
    const int rows = static_cast<int>(std::min<int64_t>(mr, m0 + mc - r0));
    float *dst = buffer + i * kc * mr;
    if (trans_) {
      for (int64_t p = 0; p < kc; ++p, dst += mr)
        copy_step(dst, a_ + (k0 + p) * ld_ + r0, rows, mr);
    } else {
      const float *src = a_ + r0 * ld_ + k0;
#if defined(__x86_64__) && defined(__GNUC__)
      // A transpose, in registers, instead of `rows` scalar copies per panel step (9% of a 1024
      // matmul was spent on those).
      if (avx512_cpu() && mr <= 16) {
        ukernels::f32_pack_rows__avx512(src, ld_, rows, kc, mr, dst, mr);
        continue;
      }
      if (avx2_cpu() && mr <= 8) {
        ukernels::f32_pack_rows__avx2(src, ld_, rows, kc, mr, dst);
        continue;
      }
#endif
      for (int64_t p = 0; p < kc; ++p, dst += mr) {
        for (int r = 0; r < rows; ++r) dst[r] = src[r * ld_ + p];
        std::fill(dst + rows, dst + mr, 0.0f);
      }
    }
  }
  return {buffer, kc * mr};
}

PanelBlock RowTableB::panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                             float *buffer) const {
  for (int64_t j = 0; j * nr < nc; ++j) {
    const int64_t c0 = n0 + j * nr;
    const int64_t cols = std::min<int64_t>(nr, n0 + nc - c0);
    float *dst = buffer + j * kc * nr;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx512_cpu() && nr == 32) {
      ukernels::f32_pack_row_table_32__avx512(base_ + c0, offsets_.data() + k0, kc,
                                              static_cast<int>(cols), dst);
      continue;
    }
    if (avx2_cpu() && nr == 16) {
      ukernels::f32_pack_row_table_16__avx2(base_ + c0, offsets_.data() + k0, kc,
                                            static_cast<int>(cols), dst);
      continue;
    }
#endif
    for (int64_t p = 0; p < kc; ++p, dst += nr)
      copy_step(dst, base_ + offsets_[k0 + p] + c0, cols, nr);
  }
  return {buffer, kc * nr};
}

PanelBlock StridedB::panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                            float *buffer) const {
  for (int64_t j = 0; j * nr < nc; ++j) {
    const int64_t c0 = n0 + j * nr;
    const int cols = static_cast<int>(std::min<int64_t>(nr, n0 + nc - c0));
    float *dst = buffer + j * kc * nr;
    if (trans_) {
      const float *src = b_ + c0 * ld_ + k0;
#if defined(__x86_64__) && defined(__GNUC__)
      // Columns are rows of the source: 16 at a time, transposed in registers (attention's K^T).
      if (avx512_cpu() && nr % 16 == 0) {
        for (int half = 0; half < nr; half += 16) {
          const int rows = std::clamp(cols - half, 0, 16);  // 0: zeros only, src unread
          ukernels::f32_pack_rows__avx512(rows ? src + half * ld_ : src, ld_, rows, kc, 16,
                                          dst + half, nr);
        }
        continue;
      }
#endif
      for (int64_t p = 0; p < kc; ++p, dst += nr) {
        for (int col = 0; col < cols; ++col) dst[col] = src[col * ld_ + p];
        std::fill(dst + cols, dst + nr, 0.0f);
      }
    } else {
      const float *src = b_ + k0 * ld_ + c0;
#if defined(__x86_64__) && defined(__GNUC__)
      if (avx512_cpu() && nr == 32) {
        ukernels::f32_pack_strided_rows_32__avx512(src, ld_, kc, cols, dst);
        continue;
      }
      if (avx2_cpu() && nr == 16) {
        ukernels::f32_pack_strided_rows_16__avx2(src, ld_, kc, cols, dst);
        continue;
      }
#endif
      for (int64_t p = 0; p < kc; ++p, dst += nr, src += ld_) copy_step(dst, src, cols, nr);
    }
  }
  return {buffer, kc * nr};
}

namespace {

// Packs a whole operand depth block by depth block: block k0 holds every panel's kc slice, one
// after another, so the block the GEMM walks is one contiguous stream (prefetchers follow it
// across pages) instead of panel slices a whole depth apart. With depth = k, panel by panel.
template <class Source>
std::shared_ptr<float[]> pack_whole(const Source &source, int64_t extent, int64_t k, int width,
                                    int64_t depth) {
  const int64_t panels = (extent + width - 1) / width;
  auto data = aligned_floats(static_cast<size_t>(checked_mul(checked_mul(panels, k), width)));
  for (int64_t k0 = 0; k0 < k; k0 += depth)
    pack_into(source, 0, extent, k0, std::min(depth, k - k0), width,
              data.get() + k0 * panels * width);
  return data;
}

}  // namespace

PackedA::PackedA(const GemmA &source, int64_t m, int64_t k, const F32GemmMicrokernel &kernel)
    : m_(m),
      k_(k),
      mr_(kernel.mr),
      depth_(depth_block(k, kDepthBlock)),
      data_(pack_whole(source, m, k, kernel.mr, depth_)) {}

PanelBlock PackedA::panels(int64_t m0, int64_t, int64_t k0, int64_t kc, int mr, float *) const {
  if (mr != mr_ || m0 % mr_ != 0) fail("PackedA: packed for mr=", mr_, ", asked for mr=", mr);
  return packed_block(data_.get(), m_, k_, mr_, depth_, m0 / mr_, k0, kc);
}

PackedB::PackedB(const GemmB &source, int64_t k, int64_t n, const F32GemmMicrokernel &kernel)
    : k_(k),
      n_(n),
      nr_(kernel.nr),
      depth_(std::max<int64_t>(k, 1)),
      data_(pack_whole(source, n, k, kernel.nr, depth_)) {}

PanelBlock PackedPanelsA::panels(int64_t m0, int64_t, int64_t k0, int64_t, int mr, float *) const {
  if (mr != mr_ || m0 % mr_ != 0) fail("PackedPanelsA: packed for mr=", mr_, ", asked for mr=", mr);
  return {data_ + (m0 / mr_) * k_ * mr_ + k0 * mr_, k_ * mr_};
}

PanelBlock PackedB::panels(int64_t n0, int64_t, int64_t k0, int64_t kc, int nr, float *) const {
  if (nr != nr_ || n0 % nr_ != 0) fail("PackedB: packed for nr=", nr_, ", asked for nr=", nr);
  return packed_block(data_.get(), n_, k_, nr_, depth_, n0 / nr_, k0, kc);
}

int64_t gemm_threads(const ThreadPool &pool, int64_t m, int64_t n, int64_t k) {
  const double macs = double(m) * double(n) * double(std::max<int64_t>(k, 1));
  return std::max<int64_t>(1, std::min<int64_t>(pool.size(), int64_t(macs / kMinMacsPerThread)));
}

void sgemm(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const GemmA &a, const GemmB &b,
           float *c, int64_t ldc, const GemmOptions &options) {
  if (m <= 0 || n <= 0) return;
  if (!options.stream && !options.accumulate && !options.finish &&
      4.0 * double(m) * double(n) >= stream_bytes()) {
    GemmOptions streaming = options;
    streaming.stream = true;
    return sgemm(pool, m, n, k, a, b, c, ldc, streaming);
  }
  const F32GemmMicrokernel &uk = options.kernel ? *options.kernel : default_f32_gemm_microkernel();
  int64_t parts = gemm_threads(pool, m, n, k);
  if (options.max_threads > 0) parts = std::min(parts, options.max_threads);
  const int64_t panels_m = (m + uk.mr - 1) / uk.mr, panels_n = (n + uk.nr - 1) / uk.nr;
  // Split rows or columns, whichever costs the busiest thread less: its tiles, plus the operand
  // bytes it handles. Splitting columns makes every thread handle all of A (and its own slice of
  // B); splitting rows, all of B. An operand packed on the fly costs each thread that packs it
  // about 16 flops a byte (an im2col gather more than a copy), and every thread packs its own; a
  // prepacked operand is only streamed, about 2 flops a byte, and threads reading the
  // same bytes share them in L3.
  const double tile_flops = 2.0 * uk.mr * uk.nr * double(k);
  const bool b_read_once = b.prepacked();
  const double a_cost = 4.0 * double(m) * double(k) * (a.prepacked() ? 2 : 16);
  const double b_cost = 4.0 * double(k) * double(n) * (b_read_once ? 2 : 16);
  // The busiest thread's tiles: its share, plus half a panel row or column for the uneven last
  // share (so ties go to the finer split: 84 row panels balance better than 6 column panels).
  const auto busiest = [&](int64_t split, int64_t other) {
    return (double(split / parts) + (split % parts ? 1.0 : 0.5)) * double(other) * tile_flops;
  };
  // Splitting rows, a gathered B is packed once by all threads together and streamed by each
  // (SharedPackedB) if it stays in L3: SqueezeNet's 13x13 3x3 convs 7% faster at 2 threads. A B
  // packed by row copies is not: each thread's own copy, in its own L2, was read faster than
  // panels packed by the other core (Inception-v2's 1x1 and 3x3 convs 10-18% slower).
  const double packed_b_bytes = 4.0 * double(k) * double(panels_n * uk.nr);
  const bool share_b = b.gathered() && k > 0 && packed_b_bytes <= kSharedOperandCachedBytes;
  const double b_cost_split_m = share_b ? b_cost / parts + 2.0 * packed_b_bytes : b_cost;
  const double cost_m = busiest(panels_m, panels_n) + a_cost / parts + b_cost_split_m;
  const double cost_n = busiest(panels_n, panels_m) + a_cost + b_cost / parts;
  const bool split_n = cost_n < cost_m;
  const int64_t panels = split_n ? panels_n : panels_m;
  parts = std::min(parts, panels);
  if (parts <= 1) return sgemm_region(0, m, 0, n, k, a, b, c, ldc, options, uk);
  if (!split_n && share_b) {
    float *data = thread_workspace().shared_b_buffer(static_cast<size_t>(panels_n * uk.nr * k));
    const SharedPackedB shared(pool, b, k, n, uk.nr, data);
    GemmOptions over_parts = options;
    over_parts.max_threads = parts;
    return sgemm(pool, m, n, k, a, shared, c, ldc, over_parts);
  }
  // Threads take chunks as they go rather than one fixed share each, so a thread slowed by
  // something else (a busy sibling core) hands work to the others instead of holding them up.
  // Every chunk reads all of the operand that is not split; that costs nothing extra only when
  // that operand needs no packing and stays in L3 between chunks, so otherwise each thread gets
  // one chunk (a 4096 GEMM's 64 MiB B streamed from memory once per chunk: 408 -> 450 GFLOP/s).
  const double shared_bytes = 4.0 * double(k) * double(split_n ? m : n);
  const bool shared_operand_free =
      (split_n ? a.prepacked() : b_read_once) && shared_bytes <= kSharedOperandCachedBytes;
  constexpr int64_t kChunksPerThread = 4;
  if (shared_operand_free) parts = std::min(panels, parts * kChunksPerThread);
  pool.parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const int64_t p0 = panels * part / parts, p1 = panels * (part + 1) / parts;
      if (split_n)
        sgemm_region(0, m, std::min(n, p0 * uk.nr), std::min(n, p1 * uk.nr), k, a, b, c, ldc,
                     options, uk);
      else
        sgemm_region(std::min(m, p0 * uk.mr), std::min(m, p1 * uk.mr), 0, n, k, a, b, c, ldc,
                     options, uk);
    }
  });
}

}  // namespace lumen::cpu
