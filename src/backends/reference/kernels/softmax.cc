// Reference softmax / log_softmax: for each (outer, inner) position, three plain passes along the
// axis (max, sum of exp(x - max) in double, write). Subtracting the max keeps exp from overflowing.
#include <cmath>
#include <limits>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// S is the storage type; half types are computed in float and rounded once on the way out.
template <class S, bool kLog>
void softmax_typed(KernelContext &ctx) {
  using T = bin::Compute<S>;
  const Tensor &xt = ctx.input(0);
  const S *xs = xt.data<S>();
  S *y = ctx.output(0).data<S>();
  auto x = [&](int64_t i) { return T(bin::load<S>(xs[i])); };
  const Shape &shape = xt.shape();
  // A rank-0 input is one element along its only "axis".
  int64_t outer = 1, len = 1, inner = 1;
  if (shape.rank() > 0) {
    const size_t axis = shape.normalize_axis(ctx.attrs.get_int("axis", -1));
    for (size_t d = 0; d < axis; ++d) outer *= shape[d];
    for (size_t d = axis + 1; d < shape.rank(); ++d) inner *= shape[d];
    len = shape[axis];
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t base = o * len * inner + j;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < len; ++k)
        if (x(base + k * inner) > max) max = x(base + k * inner);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x(base + k * inner) - max);
      for (int64_t k = 0; k < len; ++k) {
        const T shifted = x(base + k * inner) - max;
        y[base + k * inner] =
            bin::store<S>(kLog ? shifted - T(std::log(sum)) : T(double(std::exp(shifted)) / sum));
      }
    }
  }
}

LUMEN_REGISTER_KERNEL("reference", "softmax", (softmax_typed<float, false>), DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "softmax", (softmax_typed<double, false>), DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "softmax", (softmax_typed<Float16, false>), DType::Float16);
LUMEN_REGISTER_KERNEL("reference", "softmax", (softmax_typed<BFloat16, false>), DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "log_softmax", (softmax_typed<float, true>), DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "log_softmax", (softmax_typed<double, true>), DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "log_softmax", (softmax_typed<Float16, true>), DType::Float16);
LUMEN_REGISTER_KERNEL("reference", "log_softmax", (softmax_typed<BFloat16, true>), DType::BFloat16);

}  // namespace
}  // namespace lumen
