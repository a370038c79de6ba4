#include "backends/cpu/kernels/depthwise_conv.h"

#include <algorithm>

namespace lumen {
namespace {

// One output plane of a conv whose output channel reads a single input channel `xc`.
template <class T>
void direct_plane(const ConvParams &p, const T *xc, const T *wm, T bias, T *y) {
  std::fill(y, y + p.oh * p.ow, bias);
  for (int64_t a = 0; a < p.kh; ++a)
    for (int64_t b = 0; b < p.kw; ++b) {
      const T wv = wm[a * p.kw + b];
      const int64_t col_offset = b * p.dw - p.pl;
      int64_t lo, hi;
      valid_range(col_offset, p.sw, p.w, p.ow, lo, hi);
      for (int64_t i = 0; i < p.oh; ++i) {
        const int64_t ih = i * p.sh - p.pt + a * p.dh;
        if (ih < 0 || ih >= p.h) continue;
        const T *src = xc + ih * p.w + lo * p.sw + col_offset;
        T *dst = y + i * p.ow + lo;
        const int64_t count = hi - lo;
        if (p.sw == 1)
          for (int64_t j = 0; j < count; ++j) dst[j] += wv * src[j];
        else
          for (int64_t j = 0; j < count; ++j) dst[j] += wv * src[j * p.sw];
      }
    }
}

}  // namespace

template <class T>
void depthwise_conv2d(ThreadPool &pool, const ConvParams &p, const T *x, const T *w,
                      const T *bias, const T *residual, const Epilogue<T> &epilogue, T *y) {
  const int64_t in_plane = p.h * p.w, out_plane = p.oh * p.ow, kernel_area = p.kh * p.kw;
  const bool has_epilogue = residual || epilogue.has_activation();
  const int64_t planes = p.n * p.m;
  const int64_t grain =
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, out_plane * kernel_area));
  pool.parallel_for(planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const int64_t n = q / p.m, m = q % p.m;
      direct_plane(p, x + (n * p.c + m / p.mg) * in_plane, w + m * kernel_area,
                   bias ? bias[m] : T(0), y + q * out_plane);
      if (has_epilogue)
        epilogue.apply(y + q * out_plane, out_plane, nullptr,
                       residual ? residual + q * out_plane : nullptr);
    }
  });
}

template void depthwise_conv2d<float>(ThreadPool &, const ConvParams &, const float *,
                                      const float *, const float *, const float *,
                                      const Epilogue<float> &, float *);
template void depthwise_conv2d<double>(ThreadPool &, const ConvParams &, const double *,
                                       const double *, const double *, const double *,
                                       const Epilogue<double> &, double *);

}  // namespace lumen
