#include "backends/cpu/kernels/winograd_conv.h"

#include <algorithm>
#include <vector>

#include "core/cpu_isa.h"
#include "lumen/tensor.h"

namespace lumen::cpu {
namespace {

constexpr int kTile = 4;  // input tile side; 16 tile positions

// Tiles of one image: ceil(oh / 2) x ceil(ow / 2), each covering 2x2 outputs.
struct Tiling {
  int64_t rows, cols;
  int64_t count() const { return rows * cols; }
};

Tiling tiling(const ConvParams &p) {
  return {(p.oh + 1) / 2, (p.ow + 1) / 2};
}

// V = B^T d B for every tile of a tile row: rows[i][2 * tx + j] is d[i][j] of tile tx; output
// k = 4 * xi + nu of tile tx goes to out[k * k_stride + tx]. B^T = [[1,0,-1,0],[0,1,1,0],
// [0,-1,1,0],[0,1,0,-1]]. Each row is first split into its even and odd columns (`split`, room for
// 8 * (tiles + 1) floats), so the loop over tiles reads contiguous memory and vectorizes (widest
// ISA, vec::run_best); reading d[i][j] at stride 2 straight from the rows cost 3x more.
void input_tile_row(const float *rows, int64_t width, int64_t tiles, float *split, float *out,
                    int64_t k_stride) {
  vec::run_best([&]() LUMEN_VEC_INLINE {
    const int64_t half = tiles + 1;  // columns 2 * tx + j for j < 4 are even/odd [tx], [tx + 1]
    for (int i = 0; i < kTile; ++i) {
      const float *__restrict row = rows + i * width;
      float *__restrict even = split + 2 * i * half, *__restrict odd = even + half;
      for (int64_t k = 0; k < half; ++k) {
        even[k] = row[2 * k];
        odd[k] = row[2 * k + 1];
      }
    }
    float *__restrict o = out;
    const float *__restrict s = split;
    for (int64_t tx = 0; tx < tiles; ++tx) {
      float t[kTile][kTile];
      for (int j = 0; j < kTile; ++j) {
        // d[i][j] = row i, column 2 * tx + j: even/odd half j % 2, index tx + j / 2.
        const int64_t at = (j % 2) * half + tx + j / 2;
        const float d0 = s[0 * half + at], d1 = s[2 * half + at], d2 = s[4 * half + at],
                    d3 = s[6 * half + at];
        t[0][j] = d0 - d2;
        t[1][j] = d1 + d2;
        t[2][j] = d2 - d1;
        t[3][j] = d1 - d3;
      }
      for (int i = 0; i < kTile; ++i) {
        o[(4 * i + 0) * k_stride + tx] = t[i][0] - t[i][2];
        o[(4 * i + 1) * k_stride + tx] = t[i][1] + t[i][2];
        o[(4 * i + 2) * k_stride + tx] = t[i][2] - t[i][1];
        o[(4 * i + 3) * k_stride + tx] = t[i][1] - t[i][3];
      }
    }
  });
}

// Y = A^T M A for every tile of a tile row: M[k] of tile tx is prod[k * k_stride + tx]; the two
// output rows go to rows[i * 2 * tiles + 2 * tx + j]. A^T = [[1,1,1,0],[0,1,-1,-1]].
void output_tile_row(const float *prod, int64_t k_stride, int64_t tiles, float *rows) {
  vec::run_best([&]() LUMEN_VEC_INLINE {
    const float *__restrict m = prod;
    float *__restrict y0 = rows, *__restrict y1 = rows + 2 * tiles;
    for (int64_t tx = 0; tx < tiles; ++tx) {
      float t[2][kTile];
      for (int j = 0; j < kTile; ++j) {
        const float m0 = m[j * k_stride + tx], m1 = m[(4 + j) * k_stride + tx],
                    m2 = m[(8 + j) * k_stride + tx], m3 = m[(12 + j) * k_stride + tx];
        t[0][j] = m0 + m1 + m2;
        t[1][j] = m1 - m2 - m3;
      }
      y0[2 * tx] = t[0][0] + t[0][1] + t[0][2];
      y0[2 * tx + 1] = t[0][1] - t[0][2] - t[0][3];
      y1[2 * tx] = t[1][0] + t[1][1] + t[1][2];
      y1[2 * tx + 1] = t[1][1] - t[1][2] - t[1][3];
    }
  });
}

}  // namespace

// U = G g G^T for a 3x3 kernel g; G = [[1,0,0],[1/2,1/2,1/2],[1/2,-1/2,1/2],[0,0,1]].
void winograd_weight_transform(const float g[3][3], float u[4][4]) {
  float t[kTile][3];
  for (int j = 0; j < 3; ++j) {
    t[0][j] = g[0][j];
    t[1][j] = 0.5f * (g[0][j] + g[1][j] + g[2][j]);
    t[2][j] = 0.5f * (g[0][j] - g[1][j] + g[2][j]);
    t[3][j] = g[2][j];
  }
  for (int i = 0; i < kTile; ++i) {
    u[i][0] = t[i][0];
    u[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    u[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    u[i][3] = t[i][2];
  }
}

// Measured against the GEMM path in whole models (2 threads, in-process A/B): 0.6-0.8x its time
// from 32 input and 64 output channels up, down to 6x6 maps (ResNet-50's 512 -> 512 on 7x7 0.59x,
// ZFNet's 12x12 convs 0.57-0.61x, SqueezeNet's 32 -> 128 on 27x27 0.84x and 64 -> 256 on 13x13
// 0.80x, Inception-v2's 64 -> 64 on 28x28 0.78x); with 32 output channels only on large maps
// (DenseNet's 128 -> 32: 0.85-0.94x on 56x56 and 28x28, 1.05-1.3x on 14x14 and 7x7); slower with
// 16 input channels (SqueezeNet's 16 -> 64 on 55x55: 1.2x), where the transforms dominate.
bool winograd_possible(const ConvParams &p) {
  return p.kh == 3 && p.kw == 3 && p.sh == 1 && p.sw == 1 && p.dh == 1 && p.dw == 1 && p.group == 1;
}

bool winograd_applies(const ConvParams &p) {
  if (!winograd_possible(p)) return false;
  if (p.oh < 6 || p.ow < 6 || p.c < 32 || p.m < 32 || p.c * p.m < 4096) return false;
  return p.m >= 64 || p.oh * p.ow >= 27 * 27;
}

std::shared_ptr<WinogradWeights> winograd_weights(const float *w, int64_t m, int64_t c) {
  auto out = std::make_shared<WinogradWeights>();
  out->m = m;
  out->c = c;
  // 16 matrices [M, C]: element (xi, nu) of U for every (output, input) channel pair.
  std::vector<float> u(static_cast<size_t>(checked_mul(checked_mul(16, m), c)));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i) {
      float g[3][3], t[kTile][kTile];
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) g[a][b] = w[((o * c + i) * 3 + a) * 3 + b];
      winograd_weight_transform(g, t);
      for (int k = 0; k < 16; ++k) u[static_cast<size_t>((k * m + o) * c + i)] = t[k / 4][k % 4];
    }
  const F32GemmMicrokernel &kernel = default_f32_gemm_microkernel();
  for (int k = 0; k < 16; ++k)
    out->u.emplace_back(StridedA(u.data() + k * m * c, c, false), m, c, kernel);
  return out;
}

namespace {

// Where the 16 matrices of a band's V ([C, tiles] each) and P ([M, tiles]) start: one after
// another, spaced by winograd_plane_stride.
struct BandLayout {
  int64_t tiles, v_stride, p_stride;
  BandLayout(int64_t tiles, int64_t c, int64_t m)
      : tiles(tiles),
        v_stride(winograd_plane_stride(c * tiles)),
        p_stride(winograd_plane_stride(m * tiles)) {}
};

// Floats of scratch transform_band needs: 4 padded rows and their even/odd split; also room for
// finish_band's two output rows.
int64_t transform_scratch(int64_t padded_width, const Tiling &tiles) {
  return std::max(kTile * padded_width + 8 * (tiles.cols + 1), 4 * tiles.cols);
}

// The input transform of tile rows [ty0, ty1) of image xn: V[k][ch][t] for the band's tiles t,
// k_stride = c * band tiles. `rows` holds 4 padded input rows.
void transform_band(const ConvParams &p, const Tiling &tiles, const float *xn, int64_t ch0,
                    int64_t ch1, int64_t ty0, int64_t ty1, int64_t padded_width, float *rows,
                    float *v, const BandLayout &band) {
  for (int64_t ch = ch0; ch < ch1; ++ch)
    for (int64_t ty = ty0; ty < ty1; ++ty) {
      for (int i = 0; i < kTile; ++i) {
        float *row = rows + i * padded_width;
        const int64_t r = 2 * ty - p.pt + i;
        std::fill(row, row + padded_width, 0.0f);
        if (r >= 0 && r < p.h)
          std::copy(xn + (ch * p.h + r) * p.w, xn + (ch * p.h + r + 1) * p.w, row + p.pl);
      }
      input_tile_row(rows, padded_width, tiles.cols, rows + kTile * padded_width,
                     v + ch * band.tiles + (ty - ty0) * tiles.cols, band.v_stride);
    }
}

// The output transform of output channels [o0, o1) for tile rows [ty0, ty1), written to image yn
// through the epilogue.
void finish_band(const ConvParams &p, const Tiling &tiles, const float *prod,
                 const BandLayout &band, int64_t o0, int64_t o1, int64_t ty0, int64_t ty1,
                 float *rows, const float *bias, const float *zn, const Epilogue<float> &epilogue,
                 float *yn) {
  const int64_t out_plane = p.oh * p.ow;
  const bool has_epilogue = bias || zn || epilogue.has_activation();
  for (int64_t o = o0; o < o1; ++o) {
    float *yo = yn + o * out_plane;
    for (int64_t ty = ty0; ty < ty1; ++ty) {
      output_tile_row(prod + o * band.tiles + (ty - ty0) * tiles.cols, band.p_stride, tiles.cols,
                      rows);
      for (int64_t i = 0; i < 2 && 2 * ty + i < p.oh; ++i)
        std::copy(rows + i * 2 * tiles.cols, rows + i * 2 * tiles.cols + p.ow,
                  yo + (2 * ty + i) * p.ow);
    }
    if (has_epilogue) {
      const int64_t begin = 2 * ty0 * p.ow, end = std::min(p.oh, 2 * ty1) * p.ow;
      epilogue.apply_scalar_bias(yo + begin, end - begin, bias ? bias[o] : 0.0f,
                                 zn ? zn + o * out_plane + begin : nullptr);
    }
  }
}

// Rows [m0, m0 + m) of a GEMM A operand (m0 a multiple of the micro-kernel's mr).
class RowsOfA final : public GemmA {
 public:
  RowsOfA(const GemmA &a, int64_t m0) : a_(a), m0_(m0) {}
  PanelBlock panels(int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr,
                    float *buffer) const override {
    return a_.panels(m0_ + m0, mc, k0, kc, mr, buffer);
  }
  bool prepacked() const override { return a_.prepacked(); }

 private:
  const GemmA &a_;
  int64_t m0_;
};

// About this many bytes of transformed input and products per band: they stay in L2 between the
// transforms and the GEMMs.
constexpr int64_t kBandBytes = int64_t(1) << 20;

}  // namespace

void winograd_conv2d(ThreadPool &pool, const ConvParams &p, const float *x,
                     const WinogradWeights &weights, const float *bias, const float *residual,
                     const Epilogue<float> &epilogue, float *y) {
  const Tiling tiles = tiling(p);
  const int64_t m = p.m, c = p.c;
  const int64_t out_plane = p.oh * p.ow;
  // Tiles read padded columns [0, 2 * cols + 2); the input sits at [pl, pl + w).
  const int64_t padded_width = std::max(2 * tiles.cols + 2, p.pl + p.w);
  // Work items of tile rows x output channels, each transformed, multiplied by its 16 GEMMs and
  // transformed back on one thread, so its V and P stay in that core's caches. Large maps run in
  // bands of tile rows whose V and P fit in about kBandBytes (transforming the whole map first
  // sent 2 x 16 x (C + M) floats per tile through memory: at 64 channels on 56x56 that made
  // Winograd slower than the GEMM). With fewer bands than threads (small maps) the output channels
  // split over the threads instead, each transforming the whole input itself (a few percent of
  // the products): transforms, GEMMs and output transform each over the pool sent P between the
  // cores, and 27x27 and 13x13 maps ran 1.3-1.5x faster on 2 threads than on 1 where onnxruntime
  // ran 1.8x.
  int64_t band_rows =
      std::max<int64_t>(1, kBandBytes / (int64_t(sizeof(float)) * 16 * (c + m) * tiles.cols));
  int64_t bands = ceil_div(tiles.rows, band_rows), parts = 1, part_rows = m;
  if (bands * p.n < pool.size()) {
    const int64_t mr = default_f32_gemm_microkernel().mr;  // parts start on an A panel
    band_rows = tiles.rows, bands = 1;
    parts = std::min<int64_t>(pool.size(), ceil_div(m, mr));
    part_rows = ceil_div(ceil_div(m, parts), mr) * mr;
  }
  pool.parallel_for(p.n * bands * parts, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> v, prod, rows;
    const BandLayout largest(std::min(band_rows, tiles.rows) * tiles.cols, c, part_rows);
    v.resize(static_cast<size_t>(16 * largest.v_stride));
    prod.resize(static_cast<size_t>(16 * largest.p_stride));
    rows.resize(static_cast<size_t>(transform_scratch(padded_width, tiles)));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (bands * parts), band = item / parts % bands;
      const int64_t ty0 = band * band_rows, ty1 = std::min(tiles.rows, ty0 + band_rows);
      const int64_t m0 = std::min(m, item % parts * part_rows), m1 = std::min(m, m0 + part_rows);
      if (m0 >= m1) continue;
      const BandLayout layout((ty1 - ty0) * tiles.cols, c, m1 - m0);
      transform_band(p, tiles, x + n * c * p.h * p.w, 0, c, ty0, ty1, padded_width, rows.data(),
                     v.data(), layout);
      for (int k = 0; k < 16; ++k)
        sgemm(pool, m1 - m0, layout.tiles, c, RowsOfA(weights.u[static_cast<size_t>(k)], m0),
              StridedB(v.data() + k * layout.v_stride, layout.tiles, false),
              prod.data() + k * layout.p_stride, layout.tiles, {.max_threads = 1});
      const int64_t out = (n * m + m0) * out_plane;
      finish_band(p, tiles, prod.data(), layout, 0, m1 - m0, ty0, ty1, rows.data(),
                  bias ? bias + m0 : nullptr, residual ? residual + out : nullptr, epilogue,
                  y + out);
    }
  });
}

}  // namespace lumen::cpu
