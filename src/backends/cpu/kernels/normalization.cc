// CPU batch_norm and lrn on [N, C, spatial...] tensors (spatial dims flattened into S).
//   batch_norm: per channel a = scale / sqrt(var + eps) and b = bias - mean * a (in double, once),
//     then y = a * x + b over each contiguous plane of S elements. The flat element range is split
//     across the thread pool and each chunk walks the N * C planes it covers, so a few huge planes
//     and many tiny ones (rank 2: S = 1) both parallelize. x and y may be the same memory.
//   lrn: parallel over (n, c, block of up to kBlock spatial positions); the window's squares are
//     summed into a stack buffer reading contiguous rows of the neighbouring channel planes, then
//     y = x / (bias + alpha / size * sum) ^ beta (beta = 0.75, the usual value, without pow).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernels/permute.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per parallel chunk, roughly
constexpr int64_t kBlock = 256;      // spatial positions per lrn task

struct Ncs {
  int64_t n, c, s;
};

Ncs ncs(const Shape &shape) {
  int64_t s = 1;
  for (size_t d = 2; d < shape.rank(); ++d) s *= shape[d];
  return {shape[0], shape[1], s};
}

template <class T>
void batch_norm_typed(KernelContext &ctx) {
  const Tensor &xt = ctx.input(0);
  if (xt.numel() == 0) return;
  const T *x = xt.data<T>();
  const T *scale = ctx.input(1).data<T>();
  const T *bias = ctx.input(2).data<T>();
  const T *mean = ctx.input(3).data<T>();
  const T *var = ctx.input(4).data<T>();
  T *y = ctx.output(0).data<T>();
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  const Ncs d = ncs(xt.shape());
  std::vector<T> a(size_t(d.c)), b(size_t(d.c));
  for (int64_t c = 0; c < d.c; ++c) {
    const double ac = double(scale[c]) / std::sqrt(double(var[c]) + eps);
    a[c] = T(ac);
    b[c] = T(double(bias[c]) - double(mean[c]) * ac);
  }
  ctx.pool.parallel_for(xt.numel(), kGrain, [&](int64_t begin, int64_t end) {
    int64_t plane = begin / d.s;
    int64_t c = plane % d.c;
    for (int64_t i = begin; i < end; ++plane) {
      const int64_t stop = std::min(end, (plane + 1) * d.s);
      const T ac = a[c], bc = b[c];
      for (; i < stop; ++i) y[i] = ac * x[i] + bc;
      if (++c == d.c) c = 0;
    }
  });
}

// x and y point at element (n, 0, j0) and (n, c, j0); channel planes are `plane` apart.
template <class T>
void lrn_block(const T *x, T *y, int64_t c, int64_t channels, int64_t plane, int64_t width,
               int64_t before, int64_t after, T k, T bias, T beta) {
  T acc[kBlock];
  for (int64_t j = 0; j < width; ++j) acc[j] = 0;
  const int64_t lo = std::max<int64_t>(0, c - before);
  const int64_t hi = std::min<int64_t>(channels - 1, c + after);
  for (int64_t i = lo; i <= hi; ++i) {
    const T *row = x + i * plane;
    for (int64_t j = 0; j < width; ++j) acc[j] += row[j] * row[j];
  }
  const T *in = x + c * plane;
  if (beta == T(0.75)) {
    for (int64_t j = 0; j < width; ++j) {
      const T den = bias + k * acc[j];
      y[j] = in[j] / std::sqrt(den * std::sqrt(den));
    }
  } else {
    for (int64_t j = 0; j < width; ++j) y[j] = in[j] / std::pow(bias + k * acc[j], beta);
  }
}

template <class T>
void lrn_typed(KernelContext &ctx) {
  const Tensor &xt = ctx.input(0);
  if (xt.numel() == 0) return;
  const T *x = xt.data<T>();
  T *y = ctx.output(0).data<T>();
  const int64_t size = ctx.attrs.get_int("size", 0);
  const T k = T(ctx.attrs.get_float("alpha", 1e-4) / double(size));
  const T beta = T(ctx.attrs.get_float("beta", 0.75));
  const T bias = T(ctx.attrs.get_float("bias", 1.0));
  const int64_t before = (size - 1) / 2, after = size / 2;  // floor and ceil of (size - 1) / 2
  const Ncs d = ncs(xt.shape());
  const int64_t blocks = (d.s + kBlock - 1) / kBlock;
  const int64_t window = std::min(size, d.c) + 1;  // rows read per output row, roughly
  const int64_t grain = std::max<int64_t>(1, kGrain / (std::min(d.s, kBlock) * window));
  ctx.pool.parallel_for(d.n * d.c * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t nc = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t n = nc / d.c, c = nc % d.c;
      lrn_block<T>(x + n * d.c * d.s + j0, y + nc * d.s + j0, c, d.c, d.s,
                   std::min(kBlock, d.s - j0), before, after, k, bias, beta);
    }
  });
}

// MeanVarianceNormalization: (x - mean) / (sqrt(variance) + 1e-9) over `axes` (default 0, 2, 3).
// The reduced dims are permuted behind the kept ones, each group normalized as one row (moments
// in double, two passes), and the result permuted back.
template <class T>
void mean_variance_norm_typed(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const Shape &shape = x.shape();
  const size_t rank = shape.rank();
  if (x.numel() == 0) return;
  std::vector<bool> reduced(rank, false);
  for (int64_t a : ctx.attrs.get_ints("axes", {0, 2, 3})) reduced[shape.normalize_axis(a)] = true;
  std::vector<int64_t> perm, permuted_dims;
  int64_t count = 1;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t d = 0; d < rank; ++d)
      if (reduced[d] == (pass == 1)) {
        perm.push_back(static_cast<int64_t>(d));
        permuted_dims.push_back(shape[d]);
        if (pass == 1) count *= shape[d];
      }
  const int64_t groups = x.numel() / count;
  Tensor rows = Tensor::empty(shape, x.dtype());
  cpu::permute(ctx.pool, x.raw_data(), rows.raw_data(), shape, perm, sizeof(T));
  T *r = rows.data<T>();
  ctx.pool.parallel_for(groups, std::max<int64_t>(1, 16384 / count), [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      T *row = r + g * count;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < count; ++i) mean += double(row[i]);
      mean /= double(count);
      for (int64_t i = 0; i < count; ++i) var += (double(row[i]) - mean) * (double(row[i]) - mean);
      const double scale = 1.0 / (std::sqrt(var / double(count)) + 1e-9);
      for (int64_t i = 0; i < count; ++i) row[i] = T((double(row[i]) - mean) * scale);
    }
  });
  std::vector<int64_t> inverse(rank);
  for (size_t i = 0; i < rank; ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  cpu::permute(ctx.pool, r, y.raw_data(), Shape(permuted_dims), inverse, sizeof(T));
}

void mean_variance_norm(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return mean_variance_norm_typed<double>(ctx);
  mean_variance_norm_typed<float>(ctx);
}

LUMEN_REGISTER_KERNEL("cpu", "mean_variance_norm", mean_variance_norm, DType::Float32,
                      DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "batch_norm", batch_norm_typed<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "batch_norm", batch_norm_typed<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "lrn", lrn_typed<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "lrn", lrn_typed<double>, DType::Float64);

}  // namespace
}  // namespace lumen
