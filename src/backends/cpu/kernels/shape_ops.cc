// CPU reshape, transpose and concat for any dtype (they move bytes, never look at values).
//
// transpose (and depth_to_space / space_to_depth, transposes of 6-D views) is cpu::permute
// (permute.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/common/dtype_lists.h"
#include "backends/cpu/kernels/permute.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kCopyChunk = 1 << 18;  // bytes per parallel memcpy chunk

using cpu::parallel_memcpy;

void reshape(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (x.nbytes() != y.nbytes())
    ctx.fail("input ", x.shape().to_string(), " and output ", y.shape().to_string(),
             " differ in size");
  if (x.nbytes() == 0 || x.raw_data() == y.raw_data()) return;
  parallel_memcpy(ctx.pool, static_cast<char *>(y.raw_data()),
                  static_cast<const char *>(x.raw_data()), static_cast<int64_t>(x.nbytes()));
}

// y = x viewed as `shape` (x's own, or a reshape of it), permuted by `perm`.
void transpose_view(KernelContext &ctx, const Shape &shape, const std::vector<int64_t> &perm) {
  cpu::permute(ctx.pool, ctx.input(0).raw_data(), ctx.output(0).raw_data(), shape, perm,
               dtype_size(ctx.input(0).dtype()));
}

void transpose(KernelContext &ctx) {
  const Shape &shape = ctx.input(0).shape();
  std::vector<int64_t> reversed(shape.rank());
  for (size_t i = 0; i < reversed.size(); ++i)
    reversed[i] = static_cast<int64_t>(reversed.size() - 1 - i);
  transpose_view(ctx, shape, ctx.attrs.get_ints("perm", reversed));
}

// DepthToSpace: x [N, C, H, W] viewed as [N, b, b, C/b², H, W] (DCR) or [N, C/b², b, b, H, W]
// (CRD), transposed to [N, C/b², H, b, W, b].
void depth_to_space(KernelContext &ctx) {
  const Shape &x = ctx.input(0).shape();
  const int64_t b = ctx.attrs.get_int("blocksize", 1), c = ctx.output(0).shape()[1];
  if (ctx.attrs.get_string("mode", "DCR") == "CRD")
    return transpose_view(ctx, Shape{x[0], c, b, b, x[2], x[3]}, {0, 1, 4, 2, 5, 3});
  transpose_view(ctx, Shape{x[0], b, b, c, x[2], x[3]}, {0, 3, 4, 1, 5, 2});
}

// SpaceToDepth: x [N, C, H, W] viewed as [N, C, H/b, b, W/b, b], transposed to
// [N, b, b, C, H/b, W/b] (DCR) or [N, C, b, b, H/b, W/b] (CRD).
void space_to_depth(KernelContext &ctx) {
  const Shape &x = ctx.input(0).shape();
  const int64_t b = ctx.attrs.get_int("blocksize", 1);
  const Shape view{x[0], x[1], x[2] / b, b, x[3] / b, b};
  if (ctx.attrs.get_string("mode", "DCR") == "CRD")
    return transpose_view(ctx, view, {0, 1, 3, 5, 2, 4});
  transpose_view(ctx, view, {0, 3, 5, 1, 2, 4});
}

// The output is `outer` rows, each the concatenation of one row from every input.
void concat(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  const size_t axis = y.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const auto elem = static_cast<int64_t>(dtype_size(y.dtype()));
  int64_t outer = 1, inner = elem;
  for (size_t d = 0; d < axis; ++d) outer *= y.shape()[d];
  for (size_t d = axis + 1; d < y.rank(); ++d) inner *= y.shape()[d];
  const size_t k = ctx.inputs.size();
  std::vector<const char *> src(k);
  std::vector<int64_t> row_bytes(k), offset(k);
  int64_t out_row = 0;
  for (size_t i = 0; i < k; ++i) {
    src[i] = static_cast<const char *>(ctx.input(i).raw_data());
    row_bytes[i] = ctx.input(i).shape()[axis] * inner;
    offset[i] = out_row;
    out_row += row_bytes[i];
  }
  auto *dst = static_cast<char *>(y.raw_data());
  if (outer >= 4 * ctx.pool.size() || outer * out_row < kCopyChunk) {
    ctx.pool.parallel_for(
        outer, std::max<int64_t>(1, kCopyChunk / out_row), [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o)
            for (size_t i = 0; i < k; ++i)
              if (row_bytes[i])
                std::memcpy(dst + o * out_row + offset[i], src[i] + o * row_bytes[i],
                            static_cast<size_t>(row_bytes[i]));
        });
    return;
  }
  // Few, long rows: split each copy instead.
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < k; ++i)
      parallel_memcpy(ctx.pool, dst + o * out_row + offset[i], src[i] + o * row_bytes[i],
                      row_bytes[i]);
}

LUMEN_REGISTER_KERNEL("cpu", "reshape", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "squeeze", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "unsqueeze", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "flatten", reshape, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "transpose", transpose, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "concat", concat, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "depth_to_space", depth_to_space, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "space_to_depth", space_to_depth, LUMEN_ALL_DTYPES);

}  // namespace
}  // namespace lumen
