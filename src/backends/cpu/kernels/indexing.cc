// CPU gather (any dtype): indices are validated once, then contiguous slices are copied in
// parallel over (outer, index) pairs. The embedding lookup of transformers is this op.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrainBytes = 1 << 16;

void gather(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  Tensor &y = ctx.output(0);
  const auto r = static_cast<int64_t>(data.rank());
  const int64_t axis_attr = ctx.attrs.get_int("axis", 0);
  if (axis_attr < -r || axis_attr >= r)
    ctx.fail("axis ", axis_attr, " is out of range for input ", data.shape().to_string());
  const auto axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + r : axis_attr);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= data.shape()[d];
  for (size_t d = axis + 1; d < data.rank(); ++d) inner *= data.shape()[d];
  const int64_t n = data.shape()[axis], m = idx.numel();
  const size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype());
  if (static_cast<size_t>(outer * m) * block != y.nbytes())
    ctx.fail("output ", y.shape().to_string(), " does not match data ", data.shape().to_string(),
             " and indices ", idx.shape().to_string());
  std::vector<int64_t> resolved(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) {
    int64_t v;
    if (idx.dtype() == DType::Int64)
      v = idx.data<int64_t>()[j];
    else if (idx.dtype() == DType::Int32)
      v = idx.data<int32_t>()[j];
    else
      ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype()));
    if (v < -n || v >= n) ctx.fail("index ", v, " is out of range for dim ", axis, " of size ", n);
    resolved[static_cast<size_t>(j)] = v < 0 ? v + n : v;
  }
  const auto *src = static_cast<const char *>(data.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, int64_t(block)));
  ctx.pool.parallel_for(outer * m, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t o = i / m, j = i % m;
      std::memcpy(dst + static_cast<size_t>(i) * block,
                  src + static_cast<size_t>(o * n + resolved[static_cast<size_t>(j)]) * block,
                  block);
    }
  });
}

LUMEN_REGISTER_KERNEL("cpu", "gather", gather, DType::Float32, DType::Float16, DType::BFloat16,
                      DType::Float64, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                      DType::UInt8, DType::Bool);

}  // namespace
}  // namespace lumen
