// Convolution's im2col, direct form and channel epilogue, 2-D pooling and resize's per-axis
// resampling, on CUDA. A thread per
// element, in grid-stride loops.
#include <cmath>

#include "backends/cuda/kernels/activations.cuh"
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

__global__ void im2col_kernel(const float *x, float *col, ConvGeometry g, int64_t first,
                              int64_t images, int64_t group) {
  const int64_t cg = g.C / g.groups, plane = g.OH * g.OW, columns = images * plane;
  const int64_t rows = cg * g.KH * g.KW;
  LUMEN_GRID_LOOP(i, rows * columns) {
    const int64_t row = i / columns, column = i - row * columns;
    const int64_t kw = row % g.KW, kh = (row / g.KW) % g.KH, c = row / (g.KW * g.KH);
    const int64_t n = first + column / plane, p = column % plane;
    const int64_t ih = (p / g.OW) * g.sh - g.ph + kh * g.dh,
                  iw = (p % g.OW) * g.sw - g.pw + kw * g.dw;
    const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
    col[i] = inside ? x[((n * g.C + group * cg + c) * g.H + ih) * g.W + iw] : 0.f;
  }
}

__global__ void conv_direct_kernel(const float *x, const float *w, float *y, ConvGeometry g,
                                   int64_t N, int64_t M) {
  const int64_t cg = g.C / g.groups, mg = M / g.groups;
  LUMEN_GRID_LOOP(i, N * M * g.OH * g.OW) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, m = (i / (g.OW * g.OH)) % M;
    const int64_t n = i / (g.OW * g.OH * M), c0 = (m / mg) * cg;
    float acc = 0.f;
    for (int64_t c = 0; c < cg; ++c) {
      const float *in = x + (n * g.C + c0 + c) * g.H * g.W;
      const float *filter = w + (m * cg + c) * g.KH * g.KW;
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
        if (ih < 0 || ih >= g.H) continue;
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
          if (iw >= 0 && iw < g.W) acc += in[ih * g.W + iw] * filter[kh * g.KW + kw];
        }
      }
    }
    y[i] = acc;
  }
}

__global__ void channel_epilogue_kernel(float *y, const float *bias, const float *residual,
                                        int64_t count, int64_t C, int64_t plane, unsigned code,
                                        float alpha, float beta) {
  LUMEN_GRID_LOOP(i, count) {
    float v = y[i];
    if (bias) v += bias[(i / plane) % C];
    if (residual) v += residual[i];
    y[i] = activate(code, v, alpha, beta);
  }
}

__global__ void resize_axis_kernel(const float *x, const int32_t *taps, float *y, int64_t outer,
                                   int64_t in_w, int64_t out_w, int64_t inner, int64_t count,
                                   float extrapolation) {
  LUMEN_GRID_LOOP(e, outer * out_w * inner) {
    const int64_t i = e % inner, o = (e / inner) % out_w, a = e / (inner * out_w);
    const int32_t *row = taps + o * (2 * count + 1);
    float acc = extrapolation;
    if (!row[2 * count]) {
      acc = 0.f;
      const float *in = x + a * in_w * inner + i;
      for (int64_t k = 0; k < count; ++k)
        acc += __int_as_float(row[count + k]) * in[row[k] * inner];
    }
    y[e] = acc;
  }
}

__global__ void pool2d_kernel(const float *x, float *y, PoolWindow g, int mode) {
  LUMEN_GRID_LOOP(i, g.planes * g.OH * g.OW) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, plane = i / (g.OW * g.OH);
    const float *in = x + plane * g.H * g.W;
    float acc = mode == 0 ? -INFINITY : 0.f;
    int64_t count = 0;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = oh * g.sh + kh * g.dh - g.ph;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t iw = ow * g.sw + kw * g.dw - g.pw;
        if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) {
          const float v = in[ih * g.W + iw];
          acc = mode == 0 ? ((v > acc || v != v) && acc == acc ? v : acc) : acc + v;
          ++count;
        } else if (g.count_include_pad && ih < g.H + g.ph_end && iw < g.W + g.pw_end) {
          ++count;
        }
      }
    }
    y[i] = mode == 0 ? acc : (count > 0 ? acc / static_cast<float>(count) : 0.f);
  }
}

}  // namespace

cudaError_t launch_im2col(const float *x, float *col, const ConvGeometry &g, int64_t first,
                          int64_t images, int64_t group, cudaStream_t stream) {
  const int64_t count = (g.C / g.groups) * g.KH * g.KW * images * g.OH * g.OW;
  if (count == 0) return cudaSuccess;
  im2col_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, col, g, first, images, group);
  return cudaGetLastError();
}

cudaError_t launch_conv_direct(const float *x, const float *w, float *y, const ConvGeometry &g,
                               int64_t N, int64_t M, cudaStream_t stream) {
  const int64_t count = N * M * g.OH * g.OW;
  if (count == 0) return cudaSuccess;
  conv_direct_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, w, y, g, N, M);
  return cudaGetLastError();
}

cudaError_t launch_channel_epilogue(float *y, const float *bias, const float *residual,
                                    int64_t count, int64_t C, int64_t plane, unsigned code,
                                    float alpha, float beta, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  channel_epilogue_kernel<<<blocks_for(count), kThreads, 0, stream>>>(y, bias, residual, count, C,
                                                                      plane, code, alpha, beta);
  return cudaGetLastError();
}

cudaError_t launch_resize_axis(const float *x, const int32_t *taps, float *y, int64_t outer,
                               int64_t in_w, int64_t out_w, int64_t inner, int64_t count,
                               float extrapolation, cudaStream_t stream) {
  const int64_t n = outer * out_w * inner;
  if (n == 0) return cudaSuccess;
  resize_axis_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, taps, y, outer, in_w, out_w, inner,
                                                             count, extrapolation);
  return cudaGetLastError();
}

cudaError_t launch_pool2d(const float *x, float *y, const PoolWindow &g, int mode,
                          cudaStream_t stream) {
  const int64_t count = g.planes * g.OH * g.OW;
  if (count == 0) return cudaSuccess;
  pool2d_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, y, g, mode);
  return cudaGetLastError();
}

}  // namespace lumen::cuda
