// Lumen's own single-precision GEMM: C[m, n] = op(A)[m, k] * op(B)[k, n] (+ C), blocked for the
// caches (Goto's algorithm) around the micro-kernels in ukernels/, threaded over the runtime's
// pool, with a per-block hook so fused ops finish each block of C while it is in cache.
//
// Operands are sources of packed panels (the micro-kernel's layout): a plain strided matrix,
// packed block by block as the GEMM walks it; a matrix packed once ahead of time (constant
// weights, packed when the model is compiled); or, for convolutions, an image whose im2col
// matrix is packed straight from the input, block by block, never materialized whole.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backends/cpu/gemm/microkernel.h"
#include "core/thread_pool.h"

namespace lumen::cpu {

// Packed panels of a block of an operand: panel i starts at data + i * panel_stride.
struct PanelBlock {
  const float *data;
  int64_t panel_stride;
};

// op(A), handed out as MR-row panels: each panel is k steps of `mr` values (rows past the end
// zero-padded).
class GemmA {
 public:
  virtual ~GemmA() = default;
  // Panels of rows [m0, m0 + mc) and depth [k0, k0 + kc), packed into `buffer` (room for
  // ceil(mc / mr) * kc * mr floats) unless they are already packed.
  virtual PanelBlock panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                            float *buffer) const = 0;
  virtual bool prepacked() const { return false; }
};

// op(B), handed out as NR-column panels: each panel is k steps of `nr` values.
class GemmB {
 public:
  virtual ~GemmB() = default;
  virtual PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                            float *buffer) const = 0;
  virtual bool prepacked() const { return false; }
  // Whether packing a panel gathers its values one by one (an im2col matrix) rather than copying
  // rows: costly enough that a row split packs B once, shared by its threads (sgemm.cc).
  virtual bool gathered() const { return false; }
};

// A row-major matrix, or its transpose: element (i, p) of op(A) is a[i * ld + p], or a[p * ld + i]
// when transposed. Serves as either operand.
class StridedA final : public GemmA {
 public:
  StridedA(const float *a, int64_t ld, bool transposed) : a_(a), ld_(ld), trans_(transposed) {}
  PanelBlock panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                    float *buffer) const override;

 private:
  const float *a_;
  int64_t ld_;
  bool trans_;
};

class StridedB final : public GemmB {
 public:
  // Element (p, j) of op(B) is b[p * ld + j], or b[j * ld + p] when transposed.
  StridedB(const float *b, int64_t ld, bool transposed) : b_(b), ld_(ld), trans_(transposed) {}
  PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                    float *buffer) const override;

 private:
  const float *b_;
  int64_t ld_;
  bool trans_;
};

// op(B) whose row p starts at base + row_offsets[p], columns contiguous: a convolution's input
// planes, each shifted by a kernel tap. Packing a panel is one contiguous copy per step (reading
// B in place instead, with unaligned loads from rows all over the image, made the micro-kernel
// ~6% slower than the copy costs). Reading column j of row p must stay inside the caller's buffer
// for every column the GEMM computes.
class RowTableB final : public GemmB {
 public:
  RowTableB(const float *base, std::vector<int64_t> row_offsets)
      : base_(base), offsets_(std::move(row_offsets)) {}
  PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                    float *buffer) const override;

 private:
  const float *base_;
  std::vector<int64_t> offsets_;
};

// Panels a caller packed itself (with StridedA::panels over all of k, say) and reuses across
// GEMMs: panel i of mr rows at data + i * k * mr. A view; the caller keeps the memory.
class PackedPanelsA final : public GemmA {
 public:
  PackedPanelsA(const float *data, int64_t k, int mr) : data_(data), k_(k), mr_(mr) {}
  PanelBlock panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                    float *buffer) const override;
  bool prepacked() const override { return true; }

 private:
  const float *data_;
  int64_t k_;
  int mr_;
};

// An operand packed whole, once (constant weights): blocks are views into it, no copying. A PackedA
// is laid out in the GEMM's depth blocks of up to 256; a PackedB panel by panel over the whole
// depth, so it serves any depth blocking (deep ones when A is not prepacked, see sgemm.cc).
class PackedA final : public GemmA {
 public:
  PackedA(const GemmA &source, int64_t m, int64_t k, const F32GemmMicrokernel &kernel);
  PanelBlock panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                    float *buffer) const override;
  bool prepacked() const override { return true; }
  int64_t rows() const { return m_; }
  int64_t depth() const { return k_; }

 private:
  int64_t m_, k_;
  int mr_;
  int64_t depth_;  // of each packed depth block
  std::shared_ptr<float[]> data_;
};

class PackedB final : public GemmB {
 public:
  PackedB(const GemmB &source, int64_t k, int64_t n, const F32GemmMicrokernel &kernel);
  PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                    float *buffer) const override;
  bool prepacked() const override { return true; }
  int64_t depth() const { return k_; }
  int64_t cols() const { return n_; }

 private:
  int64_t k_, n_;
  int nr_;
  int64_t depth_;  // of each packed depth block: all of k
  std::shared_ptr<float[]> data_;
};

// Called with a finished block of C, rows [m0, m1) x columns [n0, n1): every product is in.
using GemmFinish = std::function<void(int64_t m0, int64_t m1, int64_t n0, int64_t n1)>;

struct GemmOptions {
  bool accumulate = false;  // C += op(A) op(B) instead of C = op(A) op(B)
  int64_t max_threads = 0;  // 0: the whole pool; 1: the calling thread only
  const GemmFinish *finish = nullptr;
  const F32GemmMicrokernel *kernel = nullptr;  // nullptr: default_f32_gemm_microkernel()
  // Bias (indexed by C's row or column), a residual (laid out like C: its residual field points
  // where C's first element would be) and clamp, applied by the micro-kernel to each tile as it
  // stores the last depth block, before finish sees it.
  const ukernels::TileEpilogue *epilogue = nullptr;
  // C's columns are a padded grid (col0 unused): C gets only the kept columns, packed, so ldc is
  // the packed row length (see ukernels/f32_gemm.h). finish still gets GEMM columns.
  const ukernels::GridColumns *grid = nullptr;
  // Set by sgemm itself: C is large and written once, so whole tiles store it streaming (see
  // ukernels::TileStore).
  bool stream = false;
};

// C[m, n] (row-major, leading dimension ldc) = op(A) op(B), or += with accumulate. k == 0 gives
// zeros (or leaves C) and still calls finish. Prepacked operands must have been packed for the
// same micro-kernel.
void sgemm(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const GemmA &a, const GemmB &b,
           float *c, int64_t ldc, const GemmOptions &options = {});

// How many threads a GEMM of this size is worth (at most pool.size()): about 128K multiply-adds
// per thread at least, below which the split costs more than it saves. Any GEMM, any dtype.
int64_t gemm_threads(const ThreadPool &pool, int64_t m, int64_t n, int64_t k);

}  // namespace lumen::cpu
