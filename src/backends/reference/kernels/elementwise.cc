// Reference broadcasting binary ops: for every output element, unravel its index and read each
// input at the matching (right-aligned, size-1-repeating) index. Deliberately naive: the CPU
// kernels' dim collapsing is checked against this.
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Offset into contiguous `in` of the element that output index `index` reads.
int64_t input_offset(const Shape &in, const std::vector<int64_t> &index) {
  const size_t lead = index.size() - in.rank();
  int64_t offset = 0;
  for (size_t d = 0; d < in.rank(); ++d)
    offset = offset * in[d] + (in[d] == 1 ? 0 : index[lead + d]);
  return offset;
}

template <class F, class T>
void binary_typed(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T *py = y.data<T>();
  const Shape &shape = y.shape();
  std::vector<int64_t> index(shape.rank(), 0);
  const F f;
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    int64_t rem = i;
    for (size_t d = shape.rank(); d-- > 0;) {
      index[d] = rem % shape[d];
      rem /= shape[d];
    }
    const T va = pa[input_offset(a.shape(), index)];
    const T vb = pb[input_offset(b.shape(), index)];
    if constexpr (std::is_same_v<F, bin::Div> && std::is_integral_v<T>)
      if (vb == T(0)) ctx.fail("integer division by zero");
    py[i] = f(va, vb);
  }
}

template <class F>
void binary(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32:
      return binary_typed<F, float>(ctx);
    case DType::Float64:
      return binary_typed<F, double>(ctx);
    case DType::Int32:
      if constexpr (!std::is_same_v<F, bin::Pow>) return binary_typed<F, int32_t>(ctx);
      break;
    case DType::Int64:
      if constexpr (!std::is_same_v<F, bin::Pow>) return binary_typed<F, int64_t>(ctx);
      break;
    default:
      break;
  }
  ctx.fail("no reference kernel for ", dtype_name(ctx.input(0).dtype()));
}

#define LUMEN_REF_BINARY(name, F)                                                     \
  LUMEN_REGISTER_KERNEL("reference", name, binary<F>, DType::Float32, DType::Float64, \
                        DType::Int32, DType::Int64)

LUMEN_REF_BINARY("add", bin::Add);
LUMEN_REF_BINARY("sub", bin::Sub);
LUMEN_REF_BINARY("mul", bin::Mul);
LUMEN_REF_BINARY("div", bin::Div);
LUMEN_REF_BINARY("maximum", bin::Maximum);
LUMEN_REF_BINARY("minimum", bin::Minimum);
LUMEN_REGISTER_KERNEL("reference", "pow", binary<bin::Pow>, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
