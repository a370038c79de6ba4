// CPU grid_sample (float32, any number of spatial dims) and affine_grid (below): per output
// location, the taps (1, 2 or 4 per spatial dim for nearest, linear, cubic) are resolved once into
// input offsets and weights, their tensor product then read for every channel. Output locations of
// each image are shared out over the pool. The semantics are the reference's
// (backends/reference/kernels/sampling.cc): the grid's last dim lists the innermost input dim
// first; coordinates outside the input follow the padding mode (zeros: taps outside read 0; border:
// clamped; reflection: reflected); cubic is Keys' a = -0.75; nearest rounds half to even.
// Coordinates that are not finite (or beyond 2^30) are clamped to +-2^30 first, so they land
// outside the input instead of in an int conversion.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "backends/common/grid_sample_taps.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr double kFar = 1073741824.0;  // 2^30

using grid_sample_taps::cubic_coeffs;
using grid_sample_taps::reflect;

enum class Mode { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct Sampler {
  Mode mode;
  Padding padding;
  bool align;
  int taps;

  // Tap t of dim d (size `len`) for grid value v: the input index (-1: reads 0) and its weight.
  void resolve(double v, int64_t len, int64_t *index, double *weight) const {
    const double lo = align ? 0.0 : -0.5, hi = align ? double(len - 1) : double(len) - 0.5;
    double p = align ? (v + 1) / 2.0 * double(len - 1) : ((v + 1) * double(len) - 1) / 2.0;
    p = p == p ? std::clamp(p, -kFar, kFar) : -kFar;
    if (mode == Mode::Nearest) p = std::nearbyint(p);  // ties to even
    if (p < lo || p > hi) {
      if (padding == Padding::Border) p = std::clamp(p, 0.0, double(len - 1));
      if (padding == Padding::Reflection) p = reflect(p, lo, hi);
    }
    int64_t base = 0;
    if (mode == Mode::Nearest) {
      base = int64_t(p);  // truncation, as the reference does
      weight[0] = 1;
    } else if (mode == Mode::Linear) {
      base = int64_t(std::floor(p));
      const double t = p - double(base);
      weight[0] = 1 - t;
      weight[1] = t;
    } else {
      base = int64_t(std::floor(p)) - 1;
      cubic_coeffs(p - std::floor(p), weight);
    }
    for (int t = 0; t < taps; ++t) {
      int64_t i = base + t;
      if (i < 0 || i >= len) {
        if (padding == Padding::Zeros) {
          i = -1;
        } else if (padding == Padding::Border) {
          i = std::clamp<int64_t>(i, 0, len - 1);
        } else {
          i = std::clamp<int64_t>(int64_t(reflect(double(i), lo, hi)), 0, len - 1);
        }
      }
      index[t] = i;
    }
  }
};

void grid_sample(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  const std::string mode = ctx.attrs.get_string("mode", "linear");
  const std::string pad = ctx.attrs.get_string("padding_mode", "zeros");
  Sampler s{mode == "nearest"  ? Mode::Nearest
            : mode == "linear" ? Mode::Linear
                               : Mode::Cubic,
            pad == "border"       ? Padding::Border
            : pad == "reflection" ? Padding::Reflection
                                  : Padding::Zeros,
            ctx.attrs.get_int("align_corners", 0) != 0, 0};
  s.taps = s.mode == Mode::Nearest ? 1 : s.mode == Mode::Linear ? 2 : 4;
  const size_t r = x.rank() - 2;
  const int64_t N = x.shape()[0], C = x.shape()[1];
  std::vector<int64_t> dims(r);
  int64_t in_size = 1, out_size = 1;
  for (size_t d = 0; d < r; ++d) {
    dims[d] = x.shape()[2 + d];
    in_size *= dims[d];
    out_size *= grid.shape()[1 + d];
  }
  int64_t combos = 1;
  for (size_t d = 0; d < r; ++d) combos *= s.taps;
  const float *px = x.data<float>(), *pg = grid.data<float>();
  float *py = y.data<float>();
  ctx.pool.parallel_for(
      N * out_size, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C * combos)),
      [&](int64_t b, int64_t e) {
        std::vector<std::array<int64_t, 4>> index(r);
        std::vector<std::array<double, 4>> weight(r);
        std::vector<int64_t> offsets(static_cast<size_t>(combos));
        std::vector<float> weights(static_cast<size_t>(combos));
        for (int64_t t = b; t < e; ++t) {
          const int64_t n = t / out_size, o = t % out_size;
          const float *g = pg + t * static_cast<int64_t>(r);
          for (size_t d = 0; d < r; ++d)
            s.resolve(double(g[r - 1 - d]), dims[d], index[d].data(), weight[d].data());
          // The tensor product of the dims' taps; a tap outside (index -1) has weight 0.
          int64_t used = 0;
          for (int64_t k = 0; k < combos; ++k) {
            double w = 1;
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0, rest = static_cast<size_t>(k); d < r; ++d) {
              const size_t tap = rest % static_cast<size_t>(s.taps);
              rest /= static_cast<size_t>(s.taps);
              w *= weight[d][tap];
              inside = inside && index[d][tap] >= 0;
              off = off * dims[d] + index[d][tap];
            }
            if (!inside) continue;
            offsets[static_cast<size_t>(used)] = off;
            weights[static_cast<size_t>(used++)] = float(w);
          }
          for (int64_t c = 0; c < C; ++c) {
            const float *src = px + (n * C + c) * in_size;
            float sum = 0;
            for (int64_t k = 0; k < used; ++k)
              sum += weights[static_cast<size_t>(k)] * src[offsets[static_cast<size_t>(k)]];
            py[(n * C + c) * out_size + o] = sum;
          }
        }
      });
}

// affine_grid: grid[n, (d,) h, w] = theta[n] @ [x, y, (z,) 1], each base coordinate
// -1 + 2 i / (len - 1) with align_corners (-1 for len 1), else -1 + (2 i + 1) / len; in double,
// points over the pool.
template <class T>
void affine_grid_typed(KernelContext &ctx) {
  const T *theta = ctx.input(0).data<T>();
  Tensor &y = ctx.output(0);
  const bool align = ctx.attrs.get_int("align_corners", 0) != 0;
  const size_t r = y.rank() - 2;  // 2 or 3
  std::array<int64_t, 3> dims{};
  int64_t count = 1;
  for (size_t d = 0; d < r; ++d) {
    dims[d] = y.shape()[1 + d];
    count *= dims[d];
  }
  const auto base = [&](int64_t i, int64_t len) {
    if (align) return len > 1 ? -1.0 + 2.0 * double(i) / double(len - 1) : -1.0;
    return -1.0 + (2.0 * double(i) + 1.0) / double(len);
  };
  T *py = y.data<T>();
  ctx.pool.parallel_for(y.shape()[0] * count, 1024, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t n = q / count;
      std::array<double, 4> hom{};  // [x (innermost dim), y, (z,) 1]
      for (int64_t d = static_cast<int64_t>(r) - 1, rest = q % count; d >= 0; --d) {
        hom[r - 1 - static_cast<size_t>(d)] = base(rest % dims[d], dims[d]);
        rest /= dims[d];
      }
      hom[r] = 1;
      const T *t = theta + n * static_cast<int64_t>(r * (r + 1));
      for (size_t i = 0; i < r; ++i) {
        double sum = 0;
        for (size_t j = 0; j <= r; ++j) sum += double(t[i * (r + 1) + j]) * hom[j];
        py[q * static_cast<int64_t>(r) + static_cast<int64_t>(i)] = T(sum);
      }
    }
  });
}

void affine_grid(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return affine_grid_typed<double>(ctx);
  affine_grid_typed<float>(ctx);
}

LUMEN_REGISTER_KERNEL("cpu", "grid_sample", grid_sample, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "affine_grid", affine_grid, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
