// CPU reshape, transpose and concat for any dtype (they move bytes, never look at values).
//
// transpose first simplifies the permutation: size-1 dims are dropped and input dims that stay
// neighbours in the output are merged, so e.g. NCHW->NHWC becomes a batch of [C, HW] -> [HW, C]
// transposes. If the innermost dim stays innermost, whole rows are memcpy'd; otherwise the two
// dims that are innermost in the input and in the output are walked in 32x32 tiles so both the
// reads and the writes stay in cache.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "backends/common/dtype_lists.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kCopyChunk = 1 << 18;  // bytes per parallel memcpy chunk

void parallel_memcpy(ThreadPool &pool, char *dst, const char *src, int64_t bytes) {
  pool.parallel_for(bytes, kCopyChunk, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

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

// The permutation after dropping size-1 dims and merging input dims that stay adjacent.
struct Transposition {
  std::vector<int64_t> in_dims;  // of the simplified input
  std::vector<int64_t> perm;     // output dim i is input dim perm[i]
};

Transposition simplify(const Shape &shape, const std::vector<int64_t> &perm) {
  const size_t rank = shape.rank();
  std::vector<int64_t> new_index(rank, -1);
  std::vector<int64_t> dims;
  for (size_t d = 0; d < rank; ++d)
    if (shape[d] != 1) {
      new_index[d] = static_cast<int64_t>(dims.size());
      dims.push_back(shape[d]);
    }
  std::vector<int64_t> p;
  for (size_t i = 0; i < rank; ++i)
    if (new_index[perm[i]] >= 0) p.push_back(new_index[perm[i]]);
  // Groups of output dims whose input dims are consecutive: [first, last] input dims each.
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (int64_t d : p) {
    if (!groups.empty() && groups.back().second + 1 == d)
      groups.back().second = d;
    else
      groups.emplace_back(d, d);
  }
  std::vector<size_t> by_input(groups.size());
  std::iota(by_input.begin(), by_input.end(), size_t{0});
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  Transposition t;
  t.in_dims.resize(groups.size());
  t.perm.resize(groups.size());
  for (size_t k = 0; k < by_input.size(); ++k) {
    const auto [first, last] = groups[by_input[k]];
    int64_t size = 1;
    for (int64_t d = first; d <= last; ++d) size *= dims[d];
    t.in_dims[k] = size;
    t.perm[by_input[k]] = static_cast<int64_t>(k);
  }
  return t;
}

template <class E>  // an unsigned integer type of the element's size
void transpose_tiled(ThreadPool &pool, const E *src, E *dst, const Transposition &t) {
  constexpr int64_t kTile = 32;
  const size_t r = t.in_dims.size();
  std::vector<int64_t> in_strides(r), out_dims(r), out_strides(r);
  for (size_t d = r, s = 1; d-- > 0;) {
    in_strides[d] = static_cast<int64_t>(s);
    s *= static_cast<size_t>(t.in_dims[d]);
  }
  for (size_t i = 0; i < r; ++i) out_dims[i] = t.in_dims[t.perm[i]];
  for (size_t i = r, s = 1; i-- > 0;) {
    out_strides[i] = static_cast<int64_t>(s);
    s *= static_cast<size_t>(out_dims[i]);
  }
  // l: innermost output dim (strided in the input); q: the output dim that is innermost in input.
  const size_t l = r - 1;
  const size_t q =
      static_cast<size_t>(std::find(t.perm.begin(), t.perm.end(), int64_t(r - 1)) - t.perm.begin());
  const int64_t nq = out_dims[q], nl = out_dims[l], l_in_stride = in_strides[t.perm[l]];
  const int64_t q_out_stride = out_strides[q];
  // The remaining output dims, walked by index per tile.
  std::vector<int64_t> rest_dims, rest_in, rest_out;
  for (size_t i = 0; i < r; ++i)
    if (i != q && i != l) {
      rest_dims.push_back(out_dims[i]);
      rest_in.push_back(in_strides[t.perm[i]]);
      rest_out.push_back(out_strides[i]);
    }
  int64_t rest = 1;
  for (int64_t d : rest_dims) rest *= d;
  const int64_t tiles_q = (nq + kTile - 1) / kTile, tiles_l = (nl + kTile - 1) / kTile;
  const int64_t tasks = rest * tiles_q * tiles_l;
  pool.parallel_for(tasks, 16, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t tl = task % tiles_l, tq = (task / tiles_l) % tiles_q;
      int64_t outer = task / (tiles_l * tiles_q), in_off = 0, out_off = 0;
      for (size_t d = rest_dims.size(); d-- > 0;) {
        const int64_t i = outer % rest_dims[d];
        outer /= rest_dims[d];
        in_off += i * rest_in[d];
        out_off += i * rest_out[d];
      }
      const int64_t q0 = tq * kTile, q1 = std::min(nq, q0 + kTile);
      const int64_t l0 = tl * kTile, l1 = std::min(nl, l0 + kTile);
      for (int64_t i = q0; i < q1; ++i) {
        const E *s = src + in_off + i;
        E *o = dst + out_off + i * q_out_stride;
        for (int64_t j = l0; j < l1; ++j) o[j] = s[j * l_in_stride];
      }
    }
  });
}

// y = x viewed as `shape` (x's own, or a reshape of it), permuted by `perm`.
void transpose_view(KernelContext &ctx, const Shape &shape, const std::vector<int64_t> &perm) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t n = x.numel();
  if (n == 0) return;
  const Transposition t = simplify(shape, perm);
  const auto elem = static_cast<int64_t>(dtype_size(x.dtype()));
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  const size_t r = t.perm.size();
  if (r <= 1) return parallel_memcpy(ctx.pool, dst, src, n * elem);
  if (t.perm[r - 1] == static_cast<int64_t>(r - 1)) {
    // Innermost dim stays innermost: copy whole rows.
    std::vector<int64_t> in_strides(r);
    for (size_t d = r, s = 1; d-- > 0;) {
      in_strides[d] = static_cast<int64_t>(s);
      s *= static_cast<size_t>(t.in_dims[d]);
    }
    const int64_t row = t.in_dims[r - 1], rows = n / row, row_bytes = row * elem;
    ctx.pool.parallel_for(
        rows, std::max<int64_t>(1, kCopyChunk / row_bytes), [&](int64_t begin, int64_t end) {
          for (int64_t k = begin; k < end; ++k) {
            int64_t rem = k, off = 0;
            for (size_t i = r - 1; i-- > 0;) {
              const int64_t dim = t.in_dims[t.perm[i]];
              off += (rem % dim) * in_strides[t.perm[i]];
              rem /= dim;
            }
            std::memcpy(dst + k * row_bytes, src + off * elem, static_cast<size_t>(row_bytes));
          }
        });
    return;
  }
  switch (elem) {
    case 1:
      return transpose_tiled(ctx.pool, reinterpret_cast<const uint8_t *>(src),
                             reinterpret_cast<uint8_t *>(dst), t);
    case 2:
      return transpose_tiled(ctx.pool, reinterpret_cast<const uint16_t *>(src),
                             reinterpret_cast<uint16_t *>(dst), t);
    case 4:
      return transpose_tiled(ctx.pool, reinterpret_cast<const uint32_t *>(src),
                             reinterpret_cast<uint32_t *>(dst), t);
    case 8:
      return transpose_tiled(ctx.pool, reinterpret_cast<const uint64_t *>(src),
                             reinterpret_cast<uint64_t *>(dst), t);
    default:
      ctx.fail("unsupported element size ", elem);
  }
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
