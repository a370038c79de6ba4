// CPU shape, size and constant_of_shape: the ops of exported shape arithmetic (Shape -> Gather ->
// Concat -> Reshape, ConstantOfShape masks), which dynamic graphs run whenever their shapes are
// known only at run time. Any input dtype: they read shapes, never values.
#include <algorithm>
#include <cstring>

#include "backends/common/dtype_lists.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// The input's dims [start, end) as int64; inference clamped the range into the output's size.
void shape(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const auto rank = static_cast<int64_t>(x.rank());
  int64_t start = ctx.attrs.get_int("start", 0);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  if (start + y.numel() > rank) ctx.fail("output holds more dims than the input has");
  std::copy_n(x.shape().dims().begin() + start, y.numel(), y.data<int64_t>());
}

void size(KernelContext &ctx) {
  ctx.output(0).data<int64_t>()[0] = ctx.input(0).numel();
}

// Every element is the one-element attribute `value` (default float32 0): written once, then
// doubled by copies of what is already filled, shared out over the pool in chunks.
void constant_of_shape(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const auto elem = static_cast<int64_t>(dtype_size(y.dtype()));
  const int64_t bytes = static_cast<int64_t>(y.nbytes());
  if (bytes == 0) return;
  char fill[16] = {};
  if (const Tensor *v = ctx.attrs.get_tensor("value")) {
    if (v->dtype() != y.dtype() || v->numel() != 1)
      ctx.fail("value must hold one ", dtype_name(y.dtype()));
    std::memcpy(fill, v->contiguous().raw_data(), static_cast<size_t>(elem));
  }
  constexpr int64_t kChunk = 1 << 16;  // bytes; a multiple of every element size
  auto *dst = static_cast<char *>(y.raw_data());
  const int64_t first = std::min(bytes, kChunk);
  for (int64_t filled = 0; filled < first; filled += elem)
    std::memcpy(dst + filled, fill, static_cast<size_t>(elem));
  ctx.pool.parallel_for((bytes + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = std::max<int64_t>(begin, 1); c < end; ++c)
      std::memcpy(dst + c * kChunk, dst, static_cast<size_t>(std::min(kChunk, bytes - c * kChunk)));
  });
}

LUMEN_REGISTER_KERNEL("cpu", "shape", shape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "size", size, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "constant_of_shape", constant_of_shape, DType::Int64, DType::Int32);

}  // namespace
}  // namespace lumen
