// Reference dft, stft, hann/hamming/blackman windows and mel_weight_matrix: direct O(n^2) DFT sums
// and the ONNX formulas, in double. Shapes were checked by inference.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "backends/common/spectral_window_kernels.h"
#include "core/kernel.h"

namespace lumen {
namespace {

using cd = std::complex<double>;

using spectral_window_kernels::one_value;

// e^(sign * 2 pi i * j * k / n), with j * k reduced mod n for accuracy.
cd twiddle(int64_t j, int64_t k, int64_t n, double sign) {
  const int64_t r = static_cast<int64_t>((static_cast<unsigned __int128>(j) * k) % n);
  const double a = sign * 2.0 * std::numbers::pi * double(r) / double(n);
  return {std::cos(a), std::sin(a)};
}

void dft(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &xs = tx.shape();
  const size_t rank = xs.rank();
  const bool inverse = ctx.attrs.get_int("inverse", 0) != 0;
  const bool onesided = ctx.attrs.get_int("onesided", 0) != 0;
  int64_t axis = ctx.has_input(2) ? one_value(ctx, 2) : ctx.attrs.get_int("axis", -2);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  const size_t ax = static_cast<size_t>(axis);
  const Shape &ys = ctx.output(0).shape();
  const int64_t len = xs[ax], m = ys[ax], c = xs[rank - 1], oc = ys[rank - 1];
  const int64_t n =
      ctx.has_input(1) ? one_value(ctx, 1) : (inverse && onesided ? 2 * (len - 1) : len);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= xs[d];
  for (size_t d = ax + 1; d + 1 < rank; ++d) inner *= xs[d];
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> y(static_cast<size_t>(ctx.output(0).numel()));
  std::vector<cd> z(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      // The input sequence, truncated or zero-padded to n (to n/2+1 for irfft).
      const int64_t used = inverse && onesided ? n / 2 + 1 : n;
      std::fill(z.begin(), z.end(), cd{});
      for (int64_t j = 0; j < std::min(len, used); ++j) {
        const size_t at = static_cast<size_t>(((o * len + j) * inner + i) * c);
        z[static_cast<size_t>(j)] = {x[at], c == 2 ? x[at + 1] : 0.0};
      }
      if (inverse && onesided)  // Hermitian extension of the one-sided spectrum
        for (int64_t k = used; k < n; ++k) z[static_cast<size_t>(k)] = std::conj(z[n - k]);
      const double sign = inverse ? 1.0 : -1.0;
      for (int64_t k = 0; k < m; ++k) {
        cd acc{};
        for (int64_t j = 0; j < n; ++j) acc += z[static_cast<size_t>(j)] * twiddle(j, k, n, sign);
        if (inverse) acc /= double(n);
        const size_t at = static_cast<size_t>(((o * m + k) * inner + i) * oc);
        y[at] = acc.real();
        if (oc == 2) y[at + 1] = acc.imag();
      }
    }
  from_f64(ctx, ctx.output(0), y);
}

void stft(KernelContext &ctx) {
  const Shape &xs = ctx.input(0).shape(), &ys = ctx.output(0).shape();
  const int64_t nb = xs[0], len = xs[1], c = xs[2], frames = ys[1], bins = ys[2];
  const int64_t step = one_value(ctx, 1);
  int64_t w =
      ctx.has_input(2) ? ctx.input(2).shape()[0] : (ctx.has_input(3) ? one_value(ctx, 3) : len);
  std::vector<double> win(static_cast<size_t>(w), 1.0);
  if (ctx.has_input(2)) win = to_f64(ctx, ctx.input(2));
  const std::vector<double> x = to_f64(ctx, ctx.input(0));
  std::vector<double> y(static_cast<size_t>(ctx.output(0).numel()));
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < bins; ++k) {
        cd acc{};
        for (int64_t j = 0; j < w; ++j) {
          const int64_t t = f * step + j;
          if (t >= len) break;
          const size_t at = static_cast<size_t>((b * len + t) * c);
          const cd v{x[at], c == 2 ? x[at + 1] : 0.0};
          acc += v * win[static_cast<size_t>(j)] * twiddle(j, k, w, -1.0);
        }
        const size_t at = static_cast<size_t>(((b * frames + f) * bins + k) * 2);
        y[at] = acc.real();
        y[at + 1] = acc.imag();
      }
  from_f64(ctx, ctx.output(0), y);
}

using spectral_window_kernels::mel_weight_matrix;
using spectral_window_kernels::window;

}  // namespace

LUMEN_REGISTER_KERNEL("reference", "dft", dft, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "stft", stft, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "hann_window", window<0>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("reference", "hamming_window", window<1>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("reference", "blackman_window", window<2>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("reference", "mel_weight_matrix", mel_weight_matrix, DType::Int32,
                      DType::Int64);

}  // namespace lumen
