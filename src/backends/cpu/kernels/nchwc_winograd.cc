#include "backends/cpu/kernels/nchwc_winograd.h"

#include <algorithm>
#include <limits>

#include "backends/cpu/kernels/conv_params.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "core/cpu_isa.h"
#include "lumen/error.h"

namespace lumen::cpu {
namespace {

constexpr int64_t kLanes = ukernels::kNchwcBlock;
constexpr int64_t kPositions = 16;  // of a 4x4 input tile
constexpr int64_t kInBlocksPerPass = 16;
// Transformed input and products of one work item: they stay in L2 between the transforms and
// the products (see nchwc_winograd_conv for large weights).
constexpr int64_t kItemBytes = int64_t(1) << 19;

// One pixel's 8 channels as a vector (GCC/Clang vector extensions): compiled inside run_best's
// bodies, each operation is one instruction of that ISA. The auto-vectorized loops over lanes were
// partly scalarized (alias checks), the transforms taking as long as the 16 products.
// load() and store() are always inlined into those bodies, so the baseline ABI for passing 32-byte
// vectors (-Wpsabi) never applies.
#pragma GCC diagnostic ignored "-Wpsabi"
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
LUMEN_VEC_INLINE inline Lanes load(const float *p) {
  Lanes v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
LUMEN_VEC_INLINE inline void store(float *p, Lanes v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// V = B^T d B of tiles [t0, t0 + tiles) (row-major over the map's tile grid, `cols` per row) of
// every input block: d is the 4x4 input patch at rows 2 ty - pt.., columns 2 tx - pl.., zero
// outside the image; v[k * v_stride + (cb * tiles + t) * 8 + l]. B^T = [[1,0,-1,0],[0,1,1,0],
// [0,-1,1,0],[0,1,0,-1]].
void input_transform(const NchwcWinogradConv &c, const float *xn, int64_t cols, int64_t t0,
                     int64_t tiles, float *v, int64_t v_stride) {
  vec::run_best([&]() LUMEN_VEC_INLINE {
    alignas(32) static constexpr float kZeros[kLanes] = {};
    for (int64_t cb = 0; cb < c.cb; ++cb) {
      const float *plane = xn + cb * c.h * c.w * kLanes;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t ty = (t0 + t) / cols, tx = (t0 + t) % cols;
        const int64_t r0 = 2 * ty - c.pt, c0 = 2 * tx - c.pl;
        // The patch's 16 pixels; a tile inside the map reads them at fixed offsets.
        Lanes d[4][4];
        if (r0 >= 0 && r0 + 3 < c.h && c0 >= 0 && c0 + 3 < c.w) {
          const float *at = plane + (r0 * c.w + c0) * kLanes;
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) d[i][j] = load(at + (i * c.w + j) * kLanes);
        } else {
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              const int64_t r = r0 + i, col = c0 + j;
              const bool inside = r >= 0 && r < c.h && col >= 0 && col < c.w;
              d[i][j] = load(inside ? plane + (r * c.w + col) * kLanes : kZeros);
            }
        }
        Lanes tt[4][4];  // B^T d: row i, column j
        for (int j = 0; j < 4; ++j) {
          tt[0][j] = d[0][j] - d[2][j];
          tt[1][j] = d[1][j] + d[2][j];
          tt[2][j] = d[2][j] - d[1][j];
          tt[3][j] = d[1][j] - d[3][j];
        }
        float *out = v + (cb * tiles + t) * kLanes;
        for (int i = 0; i < 4; ++i) {  // (B^T d) B
          float *o = out + 4 * i * v_stride;
          store(o, tt[i][0] - tt[i][2]);
          store(o + v_stride, tt[i][1] + tt[i][2]);
          store(o + 2 * v_stride, tt[i][2] - tt[i][1]);
          store(o + 3 * v_stride, tt[i][1] - tt[i][3]);
        }
      }
    }
  });
}

// Y = A^T M A of tiles [t0, t0 + tiles) for output blocks [b0, b1): M[k] of (block b, tile t) at
// prod[k * p_stride + ((b - b0) * tiles + t) * 8]; adds bias and residual, clamps, and stores the
// 2x2 outputs that fall inside the map. A^T = [[1,1,1,0],[0,1,-1,-1]].
void output_transform(const NchwcWinogradConv &c, int64_t n, int64_t cols, int64_t t0,
                      int64_t tiles, int64_t b0, int64_t b1, const float *prod, int64_t p_stride) {
  vec::run_best([&]() LUMEN_VEC_INLINE {
    const int64_t out_plane = c.oh * c.ow * kLanes;
    const Lanes zero = {}, lo = zero + c.lo, hi = zero + c.hi;
    for (int64_t b = b0; b < b1; ++b) {
      const Lanes bias = c.bias ? load(c.bias + b * kLanes) : zero;
      const int64_t plane = (n * c.mb + b) * out_plane;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t ty = (t0 + t) / cols, tx = (t0 + t) % cols;
        const float *m = prod + ((b - b0) * tiles + t) * kLanes;
        Lanes r[2][4];
        for (int j = 0; j < 4; ++j) {
          const Lanes m0 = load(m + j * p_stride), m1 = load(m + (4 + j) * p_stride),
                      m2 = load(m + (8 + j) * p_stride), m3 = load(m + (12 + j) * p_stride);
          r[0][j] = m0 + m1 + m2;
          r[1][j] = m1 - m2 - m3;
        }
        for (int i = 0; i < 2 && 2 * ty + i < c.oh; ++i) {
          const Lanes y[2] = {r[i][0] + r[i][1] + r[i][2] + bias,
                              r[i][1] - r[i][2] - r[i][3] + bias};
          for (int j = 0; j < 2 && 2 * tx + j < c.ow; ++j) {
            const int64_t at = plane + ((2 * ty + i) * c.ow + 2 * tx + j) * kLanes;
            Lanes out = c.residual ? y[j] + load(c.residual + at) : y[j];
            out = out < lo ? lo : out;  // NaN stays NaN: compares with it are false
            store(c.y + at, out > hi ? hi : out);
          }
        }
      }
    }
  });
}

}  // namespace

std::shared_ptr<NchwcWinogradWeights> nchwc_winograd_weights(const float *w, int64_t m, int64_t c,
                                                             std::vector<int64_t> groups) {
  auto out = std::make_shared<NchwcWinogradWeights>();
  out->m = m, out->groups = std::move(groups);
  out->u.resize(static_cast<size_t>(checked_mul(checked_mul(kPositions, m), c)));
  float *u = out->u.data();
  for (size_t fg = 0; fg + 1 < out->groups.size(); ++fg) {
    const int64_t first = out->groups[fg], filters = out->groups[fg + 1] - first;
    for (int64_t f = 0; f < filters; ++f)
      for (int64_t l = 0; l < kLanes; ++l) {
        const int64_t o = (first + f) * kLanes + l;
        for (int64_t i = 0; i < c; ++i) {
          float g[3][3], t[4][4];
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) g[a][b] = w[((o * c + i) * 3 + a) * 3 + b];
          winograd_weight_transform(g, t);
          for (int64_t k = 0; k < kPositions; ++k)
            u[k * m * c + first * kLanes * c + (i * filters + f) * kLanes + l] = t[k / 4][k % 4];
        }
      }
  }
  return out;
}

// Work items: (image, part of the tiles, slice of the filter groups). An item transforms its
// part's input (all input blocks), runs the 16 pointwise products for its filter groups, and
// transforms its outputs back, all on one thread, so its transformed input and products stay in
// that core's caches. The parts are runs of tiles in row-major order, as even as a tile allows,
// in whole rounds over the threads (bands of whole tile rows split 14x14 maps 28 : 21 tiles
// between two threads). Small maps, with fewer parts than threads, split the filter groups
// instead, each slice transforming the input itself (at 2+ groups per slice a small share of its
// products).
void nchwc_winograd_conv(ThreadPool &pool, const NchwcWinogradConv &c,
                         const NchwcWinogradWeights &weights) {
  const int64_t rows = ceil_div(c.oh, 2), cols = ceil_div(c.ow, 2), all = rows * cols;
  const int64_t fgroups = static_cast<int64_t>(weights.groups.size()) - 1;
  const int64_t threads = pool.size();
  const int64_t tile_bytes = kPositions * (c.cb + c.mb) * kLanes * int64_t(sizeof(float));
  // Every part reads all the transformed weights: where they are large, parts take up to three
  // times kItemBytes, so fewer of them read the weights (ResNet-50's 256 -> 256 convs on 14x14:
  // 4 MB of weights, 4 parts -> 2).
  const int64_t weight_bytes = kPositions * c.mb * c.cb * kLanes * kLanes * int64_t(sizeof(float));
  const int64_t item_bytes = std::clamp<int64_t>(weight_bytes / 2, kItemBytes, 3 * kItemBytes);
  int64_t parts = ceil_div(all, std::clamp<int64_t>(item_bytes / tile_bytes, 1, all));
  if (parts > 1) parts = std::min(all, ceil_div(parts, threads) * threads);
  const int64_t slices =
      std::clamp<int64_t>(ceil_div(2 * threads, c.n * parts), 1, std::max<int64_t>(1, fgroups / 2));
  const int64_t c_floats = c.cb * kLanes, out_plane = c.oh * c.ow * kLanes;
  pool.parallel_for(c.n * parts * slices, 1, [&](int64_t begin, int64_t end) {
    thread_local AlignedFloats v, prod;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (parts * slices), part = item / slices % parts;
      const int64_t slice = item % slices;
      const int64_t t0 = all * part / parts, tiles = all * (part + 1) / parts - t0;
      const int64_t g0 = fgroups * slice / slices, g1 = fgroups * (slice + 1) / slices;
      const int64_t b0 = weights.groups[g0], b1 = weights.groups[g1];
      if (b0 >= b1) continue;
      // The 16 planes of transformed input ([cb][tiles][8] each) and of products.
      const int64_t v_stride = winograd_plane_stride(c.cb * tiles * kLanes);
      const int64_t p_stride = winograd_plane_stride((b1 - b0) * tiles * kLanes);
      v.resize(static_cast<size_t>(kPositions * v_stride));
      prod.resize(static_cast<size_t>(kPositions * p_stride));
      input_transform(c, c.x + n * c.cb * c.h * c.w * kLanes, cols, t0, tiles, v.data(), v_stride);
      ukernels::NchwcConvTile p{};
      p.x_block_stride = tiles * kLanes;
      p.x_pixel_stride = kLanes;
      p.y_block_stride = tiles * kLanes;
      p.lo = -std::numeric_limits<float>::infinity(), p.hi = -p.lo;
      // Each filter group's weights for one position are contiguous over all input blocks:
      // walked in that order, the item streams its weights front to back.
      const auto weights_at = [&](int64_t k, int64_t gi, int64_t k0) {
        const int64_t first = weights.groups[gi], filters = weights.groups[gi + 1] - first;
        return weights.u.data() + k * weights.m * c_floats + first * kLanes * c_floats +
               k0 * kLanes * filters * kLanes;
      };
      for (int64_t k = 0; k < kPositions; ++k)
        for (int64_t gi = g0; gi < g1; ++gi) {
          const int64_t first = weights.groups[gi], filters = weights.groups[gi + 1] - first;
          p.filters = static_cast<int>(filters);
          for (int64_t k0 = 0; k0 < c.cb; k0 += kInBlocksPerPass) {
            p.in_blocks = std::min(kInBlocksPerPass, c.cb - k0);
            p.accumulate = k0 > 0;
            p.last = k0 + kInBlocksPerPass >= c.cb;
            p.x = v.data() + k * v_stride + k0 * tiles * kLanes;
            p.w = weights_at(k, gi, k0);
            // The next call's: this group's next pass, the next group's first, or the next
            // position's first group's (all about this call's size).
            p.next_w = k0 + kInBlocksPerPass < c.cb ? weights_at(k, gi, k0 + kInBlocksPerPass)
                       : gi + 1 < g1                ? weights_at(k, gi + 1, 0)
                       : k + 1 < kPositions         ? weights_at(k + 1, g0, 0)
                                                    : nullptr;
            p.next_w_floats = p.in_blocks * kLanes * filters * kLanes;
            p.y = prod.data() + k * p_stride + (first - b0) * tiles * kLanes;
            c.tile(p, tiles);
          }
        }
      output_transform(c, n, cols, t0, tiles, b0, b1, prod.data(), p_stride);
      if (c.epilogue)  // the part's outputs of each block, while they are in cache
        for (int64_t b = b0; b < b1; ++b)
          for (int64_t t = t0; t < t0 + tiles;) {  // a run of tiles within one tile row
            const int64_t ty = t / cols, tx = t % cols, run = std::min(cols - tx, t0 + tiles - t);
            const int64_t x0 = 2 * tx, x1 = std::min(c.ow, 2 * (tx + run));
            for (int64_t y = 2 * ty; y < std::min(c.oh, 2 * ty + 2); ++y)
              c.epilogue->apply(c.y + (n * c.mb + b) * out_plane + (y * c.ow + x0) * kLanes,
                                (x1 - x0) * kLanes, nullptr, nullptr);
            t += run;
          }
    }
  });
}

}  // namespace lumen::cpu
