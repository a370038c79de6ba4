// CPU DFT and STFT (float32) as GEMMs: a length-n DFT of many sequences is the sequences (rows,
// real and imaginary planes) times the n x m matrices of cos and sin(2 pi j k / n), on the packed
// GEMM; an STFT is the same over its windowed frames. Twiddles come from one table of n angles
// (j k reduced mod n, computed in double). Transforms too long for their matrices (more than
// kMatrixEntries) multiply by the table directly, row by row. The semantics are the reference's
// (backends/reference/kernels/signal.cc): truncation or zero padding to dft_length, the one-sided
// spectrum's Hermitian extension for an inverse, 1/n scaling of the inverse.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "backends/cpu/gemm/sgemm.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kMatrixEntries = int64_t{1} << 22;  // 16 MiB per float matrix at most

int64_t scalar_input(const KernelContext &ctx, size_t i) {
  const Tensor &t = ctx.input(i);
  if (t.numel() != 1) ctx.fail("input ", i, " must hold one value, got ", t.numel());
  if (t.dtype() == DType::Int64) return t.data<int64_t>()[0];
  if (t.dtype() == DType::Int32) return t.data<int32_t>()[0];
  ctx.fail("input ", i, " must be int32 or int64, got ", dtype_name(t.dtype()));
}

// (yr + i yi)[r, k] = sum_j (zr + i zi)[r, j] e^(sign 2 pi i j k / n) for k < m; zi may be null.
void dft_rows(ThreadPool &pool, const float *zr, const float *zi, int64_t rows, int64_t n,
              int64_t m, double sign, float *yr, float *yi) {
  std::vector<float> cos_t(static_cast<size_t>(n)), sin_t(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const double a = 2.0 * std::numbers::pi * double(t) / double(n);
    cos_t[static_cast<size_t>(t)] = float(std::cos(a));
    sin_t[static_cast<size_t>(t)] = float(sign * std::sin(a));
  }
  const auto angle = [n](int64_t j, int64_t k) {
    return static_cast<size_t>(static_cast<unsigned __int128>(j) * static_cast<uint64_t>(k) %
                               static_cast<uint64_t>(n));
  };
  // (a + ib)(c + is) = ac - bs + i(bc + as)
  if (n * m > kMatrixEntries) {
    pool.parallel_for(rows * m, std::max<int64_t>(1, 16384 / n), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t r = t / m, k = t % m;
        double re = 0, im = 0;
        for (int64_t j = 0; j < n; ++j) {
          const size_t a = angle(j, k);
          const double x = zr[r * n + j], y = zi ? zi[r * n + j] : 0.0;
          re += x * cos_t[a] - y * sin_t[a];
          im += y * cos_t[a] + x * sin_t[a];
        }
        yr[t] = float(re);
        yi[t] = float(im);
      }
    });
    return;
  }
  std::vector<float> c(static_cast<size_t>(n * m)), s(c.size()), neg_s;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < m; ++k) {
      c[static_cast<size_t>(j * m + k)] = cos_t[angle(j, k)];
      s[static_cast<size_t>(j * m + k)] = sin_t[angle(j, k)];
    }
  const cpu::StridedB cb(c.data(), m, false), sb(s.data(), m, false);
  const cpu::StridedA ar(zr, n, false);
  cpu::sgemm(pool, rows, m, n, ar, cb, yr, m);
  cpu::sgemm(pool, rows, m, n, ar, sb, yi, m);
  if (!zi) return;
  neg_s.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i) neg_s[i] = -s[i];
  cpu::GemmOptions accumulate;
  accumulate.accumulate = true;
  const cpu::StridedA ai(zi, n, false);
  cpu::sgemm(pool, rows, m, n, ai, cpu::StridedB(neg_s.data(), m, false), yr, m, accumulate);
  cpu::sgemm(pool, rows, m, n, ai, cb, yi, m, accumulate);
}

void dft(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  Tensor &ty = ctx.output(0);
  const Shape &xs = tx.shape(), &ys = ty.shape();
  const size_t rank = xs.rank();
  const bool inverse = ctx.attrs.get_int("inverse", 0) != 0;
  const bool onesided = ctx.attrs.get_int("onesided", 0) != 0;
  int64_t axis = ctx.has_input(2) ? scalar_input(ctx, 2) : ctx.attrs.get_int("axis", -2);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis + 1 >= static_cast<int64_t>(rank))
    ctx.fail("axis ", axis, " is out of range for input ", xs.to_string());
  const auto ax = static_cast<size_t>(axis);
  const int64_t len = xs[ax], m = ys[ax], c = xs[rank - 1], oc = ys[rank - 1];
  const int64_t n =
      ctx.has_input(1) ? scalar_input(ctx, 1) : (inverse && onesided ? 2 * (len - 1) : len);
  if (n <= 0) ctx.fail("dft_length must be positive, got ", n);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= xs[d];
  for (size_t d = ax + 1; d + 1 < rank; ++d) inner *= xs[d];
  const int64_t rows = outer * inner;
  // The sequences as rows, truncated or zero-padded to n (n/2+1 given for an inverse one-sided).
  const int64_t used = std::min(len, inverse && onesided ? n / 2 + 1 : n);
  std::vector<float> zr(static_cast<size_t>(checked_mul(rows, n)), 0.0f), zi;
  if (c == 2 || (inverse && onesided)) zi.assign(zr.size(), 0.0f);
  const float *x = tx.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r / inner, i = r % inner;
    for (int64_t j = 0; j < used; ++j) {
      const int64_t at = ((o * len + j) * inner + i) * c;
      zr[static_cast<size_t>(r * n + j)] = x[at];
      if (c == 2) zi[static_cast<size_t>(r * n + j)] = x[at + 1];
    }
    if (inverse && onesided)  // Hermitian extension of the one-sided spectrum
      for (int64_t k = n / 2 + 1; k < n; ++k) {
        zr[static_cast<size_t>(r * n + k)] = zr[static_cast<size_t>(r * n + n - k)];
        zi[static_cast<size_t>(r * n + k)] = -zi[static_cast<size_t>(r * n + n - k)];
      }
  }
  std::vector<float> yr(static_cast<size_t>(rows * m)), yi(yr.size());
  dft_rows(ctx.pool, zr.data(), zi.empty() ? nullptr : zi.data(), rows, n, m, inverse ? 1.0 : -1.0,
           yr.data(), yi.data());
  const float scale = inverse ? 1.0f / float(n) : 1.0f;
  float *y = ty.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r / inner, i = r % inner;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t at = ((o * m + k) * inner + i) * oc;
      y[at] = yr[static_cast<size_t>(r * m + k)] * scale;
      if (oc == 2) y[at + 1] = yi[static_cast<size_t>(r * m + k)] * scale;
    }
  }
}

void stft(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  const Shape &xs = tx.shape(), &ys = ctx.output(0).shape();
  const int64_t batch = xs[0], len = xs[1], c = xs[2], frames = ys[1], bins = ys[2];
  const int64_t step = scalar_input(ctx, 1);
  const int64_t w =
      ctx.has_input(2) ? ctx.input(2).shape()[0] : (ctx.has_input(3) ? scalar_input(ctx, 3) : len);
  if (w <= 0) ctx.fail("frame length must be positive, got ", w);
  std::vector<float> window(static_cast<size_t>(w), 1.0f);
  if (ctx.has_input(2)) std::copy_n(ctx.input(2).data<float>(), w, window.begin());
  // Windowed frames as rows (zero past the signal's end).
  const int64_t rows = batch * frames;
  std::vector<float> zr(static_cast<size_t>(checked_mul(rows, w)), 0.0f), zi;
  if (c == 2) zi.assign(zr.size(), 0.0f);
  const float *x = tx.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / frames, f = r % frames;
    for (int64_t j = 0; j < w && f * step + j < len; ++j) {
      const int64_t at = (b * len + f * step + j) * c;
      zr[static_cast<size_t>(r * w + j)] = x[at] * window[static_cast<size_t>(j)];
      if (c == 2) zi[static_cast<size_t>(r * w + j)] = x[at + 1] * window[static_cast<size_t>(j)];
    }
  }
  std::vector<float> yr(static_cast<size_t>(rows * bins)), yi(yr.size());
  dft_rows(ctx.pool, zr.data(), zi.empty() ? nullptr : zi.data(), rows, w, bins, -1.0, yr.data(),
           yi.data());
  float *y = ctx.output(0).data<float>();
  for (size_t i = 0; i < yr.size(); ++i) {
    y[2 * i] = yr[i];
    y[2 * i + 1] = yi[i];
  }
}

LUMEN_REGISTER_KERNEL("cpu", "dft", dft, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "stft", stft, DType::Float32);

}  // namespace
}  // namespace lumen
