// Reference reshape (also squeeze, unsqueeze, flatten), transpose and concat: byte copies, element
// by element, for any dtype; shape, size and constant_of_shape.
#include <cstring>
#include <vector>

#include "backends/common/dtype_lists.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// The output holds the same elements in the same order; only the shape differs.
void reshape(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (x.nbytes() != y.nbytes())
    ctx.fail("input ", x.shape().to_string(), " and output ", y.shape().to_string(),
             " differ in size");
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  for (size_t i = 0; i < x.nbytes(); ++i) dst[i] = src[i];
}

// Output index i reads input index (.., i[k] at position perm[k], ..).
void transpose(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.rank();
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> reversed(rank);
  for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
  const std::vector<int64_t> perm = ctx.attrs.get_ints("perm", reversed);
  const size_t elem = dtype_size(x.dtype());
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  std::vector<int64_t> index(rank);
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    int64_t rem = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rem % y.shape()[d];
      rem /= y.shape()[d];
    }
    for (size_t d = 0; d < rank; ++d) offset += index[d] * in_strides[perm[d]];
    std::memcpy(dst + i * elem, src + offset * elem, elem);
  }
}

// For each output element: find the input whose slice along the axis holds it, and copy.
void concat(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const size_t rank = y.rank();
  const size_t axis = y.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const size_t elem = dtype_size(y.dtype());
  auto *dst = static_cast<char *>(y.raw_data());
  std::vector<int64_t> index(rank);
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    int64_t rem = i;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rem % y.shape()[d];
      rem /= y.shape()[d];
    }
    int64_t along = index[axis];
    size_t which = 0;
    while (along >= ctx.input(which).shape()[axis]) along -= ctx.input(which++).shape()[axis];
    const Tensor &x = ctx.input(which);
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset = offset * x.shape()[d] + (d == axis ? along : index[d]);
    std::memcpy(dst + i * elem, static_cast<const char *>(x.raw_data()) + offset * elem, elem);
  }
}

// The input's dims [start, end) as int64.
void shape(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const auto rank = static_cast<int64_t>(x.rank());
  int64_t start = ctx.attrs.get_int("start", 0);
  if (start < 0) start += rank;
  start = start < 0 ? 0 : (start > rank ? rank : start);
  auto *out = y.data<int64_t>();
  for (int64_t i = 0; i < y.numel(); ++i) out[i] = x.shape()[static_cast<size_t>(start + i)];
}

void size(KernelContext &ctx) {
  ctx.output(0).data<int64_t>()[0] = ctx.input(0).numel();
}

// Every output element is a copy of the one-element attribute `value` (default float32 0).
void constant_of_shape(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const size_t elem = dtype_size(y.dtype());
  std::vector<char> fill(elem, 0);
  if (const Tensor *v = ctx.attrs.get_tensor("value")) {
    if (v->dtype() != y.dtype() || v->numel() != 1)
      ctx.fail("value must hold one ", dtype_name(y.dtype()));
    std::memcpy(fill.data(), v->contiguous().raw_data(), elem);
  }
  auto *dst = static_cast<char *>(y.raw_data());
  for (int64_t i = 0, n = y.numel(); i < n; ++i) std::memcpy(dst + i * elem, fill.data(), elem);
}

LUMEN_REGISTER_KERNEL("reference", "reshape", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "squeeze", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "unsqueeze", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "flatten", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "shape", shape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "size", size, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "constant_of_shape", constant_of_shape, DType::Int64,
                      DType::Int32);
LUMEN_REGISTER_KERNEL("reference", "transpose", transpose, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "concat", concat, LUMEN_ALL_DTYPES);

}  // namespace
}  // namespace lumen
