// Reference broadcasting binary ops: for every output element, unravel its index and read each
// input at the matching (right-aligned, size-1-repeating) index. Deliberately naive: the CPU
// kernels' dim collapsing is checked against this. Float16/BFloat16 are computed in float.
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

// TA is the dtype of input 0 and of the output; TB the dtype of input 1 (differs only for pow).
template <class F, class TA, class TB>
void binary_typed(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const TA *pa = a.data<TA>();
  const TB *pb = b.data<TB>();
  TA *py = y.data<TA>();
  const Shape &shape = y.shape();
  std::vector<int64_t> index(shape.rank(), 0);
  const F f;
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    int64_t rem = i;
    for (size_t d = shape.rank(); d-- > 0;) {
      index[d] = rem % shape[d];
      rem /= shape[d];
    }
    const auto va = bin::load(pa[input_offset(a.shape(), index)]);
    const auto vb = bin::load(pb[input_offset(b.shape(), index)]);
    if constexpr (std::is_same_v<F, bin::Div> && std::is_integral_v<TA>)
      if (vb == TB(0)) ctx.fail("integer division by zero");
    py[i] = bin::store<TA>(f(va, vb));
  }
}

template <class F>
void binary(KernelContext &ctx) {
  const DType da = ctx.input(0).dtype(), db = ctx.input(1).dtype();
  if (!bin::visit_binary_dtypes<F>(
          da, db, [&](auto ta, auto tb) { binary_typed<F, decltype(ta), decltype(tb)>(ctx); }))
    ctx.fail("no reference kernel for ", dtype_name(da), " and ", dtype_name(db), " inputs");
}

#define LUMEN_REF_BINARY(name, F) \
  LUMEN_REGISTER_KERNEL("reference", name, binary<F>, LUMEN_NUMERIC_DTYPES)

LUMEN_REF_BINARY("add", bin::Add);
LUMEN_REF_BINARY("sub", bin::Sub);
LUMEN_REF_BINARY("mul", bin::Mul);
LUMEN_REF_BINARY("div", bin::Div);
LUMEN_REF_BINARY("maximum", bin::Maximum);
LUMEN_REF_BINARY("minimum", bin::Minimum);
LUMEN_REF_BINARY("pow", bin::Pow);

}  // namespace
}  // namespace lumen
