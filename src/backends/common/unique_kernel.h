// The Unique kernel both backends register: the unique slices are found by the op's own definition
// (indexing_detail::unique_slices, src/graph/ops/indexing.cc, a sort), then copied out with their
// first indices, the inverse indices and the counts. The sort is the work; there is no faster
// CPU formulation to keep apart from the reference's.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/kernel.h"
#include "graph/ops/indexing.h"

namespace lumen {
inline void unique_kernel(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  int64_t axis = -1, outer = 1, n = x.numel(), inner = 1;
  if (ctx.attrs.has("axis")) {
    const size_t a = x.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
    axis = static_cast<int64_t>(a);
    n = x.shape()[a];
    for (size_t d = 0; d < a; ++d) outer *= x.shape()[d];
    for (size_t d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  }
  std::vector<int64_t> first, inverse, counts;
  try {
    indexing_detail::unique_slices(x, axis, ctx.attrs.get_int("sorted", 1) != 0, first, inverse,
                                   counts);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  const auto u = static_cast<int64_t>(first.size());
  Tensor &y = ctx.output(0);
  const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  if (static_cast<size_t>(outer * u) * block != y.nbytes() || ctx.output(1).numel() != u ||
      ctx.output(2).numel() != n || ctx.output(3).numel() != u)
    ctx.fail("outputs do not match the ", u, " unique values of input ", x.shape().to_string());
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < u; ++g)
      std::memcpy(dst + static_cast<size_t>(o * u + g) * block,
                  src + static_cast<size_t>(o * n + first[static_cast<size_t>(g)]) * block, block);
  std::copy(first.begin(), first.end(), ctx.output(1).data<int64_t>());
  std::copy(inverse.begin(), inverse.end(), ctx.output(2).data<int64_t>());
  std::copy(counts.begin(), counts.end(), ctx.output(3).data<int64_t>());
}

}  // namespace lumen
