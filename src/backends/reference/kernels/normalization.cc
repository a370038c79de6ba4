// Reference batch_norm and lrn: the ONNX formulas as written, one output element at a time, in
// double. Shapes were checked by inference; x is [N, C, spatial...] with the spatial dims
// flattened into one.
#include <algorithm>
#include <cmath>

#include "core/kernel.h"

namespace lumen {
namespace {

// N, C and the flattened spatial size of a [N, C, ...] shape.
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
  const T *x = ctx.input(0).data<T>();
  const T *scale = ctx.input(1).data<T>();
  const T *bias = ctx.input(2).data<T>();
  const T *mean = ctx.input(3).data<T>();
  const T *var = ctx.input(4).data<T>();
  T *y = ctx.output(0).data<T>();
  const double eps = ctx.attrs.get_float("epsilon", 1e-5);
  const Ncs d = ncs(ctx.input(0).shape());
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t s = 0; s < d.s; ++s) {
        const int64_t i = (n * d.c + c) * d.s + s;
        y[i] = T(double(scale[c]) * (double(x[i]) - double(mean[c])) /
                     std::sqrt(double(var[c]) + eps) +
                 double(bias[c]));
      }
}

template <class T>
void lrn_typed(KernelContext &ctx) {
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  const int64_t size = ctx.attrs.get_int("size", 0);
  const double alpha = ctx.attrs.get_float("alpha", 1e-4);
  const double beta = ctx.attrs.get_float("beta", 0.75);
  const double bias = ctx.attrs.get_float("bias", 1.0);
  const int64_t before = (size - 1) / 2, after = size / 2;  // floor and ceil of (size - 1) / 2
  const Ncs d = ncs(ctx.input(0).shape());
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t s = 0; s < d.s; ++s) {
        double square_sum = 0;
        const int64_t lo = std::max<int64_t>(0, c - before);
        const int64_t hi = std::min<int64_t>(d.c - 1, c + after);
        for (int64_t i = lo; i <= hi; ++i) {
          const double v = x[(n * d.c + i) * d.s + s];
          square_sum += v * v;
        }
        const int64_t at = (n * d.c + c) * d.s + s;
        y[at] = T(double(x[at]) / std::pow(bias + alpha / double(size) * square_sum, beta));
      }
}

LUMEN_REGISTER_KERNEL("reference", "batch_norm", batch_norm_typed<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "batch_norm", batch_norm_typed<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "lrn", lrn_typed<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "lrn", lrn_typed<double>, DType::Float64);

}  // namespace
}  // namespace lumen
