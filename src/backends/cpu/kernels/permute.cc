// The CPU backend's permutation of a contiguous tensor (transpose and the kernels that reorder
// dims: depth_to_space, einsum, reductions over scattered axes). The permutation is simplified
// first: size-1 dims are dropped and input dims that stay neighbours in the output are merged, so
// e.g. NCHW->NHWC becomes a batch of [C, HW] -> [HW, C] transposes. If the innermost dim stays
// innermost, whole rows are memcpy'd; otherwise the two dims that are innermost in the input and
// in the output are walked in 32x32 tiles so both the reads and the writes stay in cache.
#include "backends/cpu/kernels/permute.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace lumen::cpu {
namespace {

constexpr int64_t kCopyChunk = 1 << 18;  // bytes per parallel memcpy chunk

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

}  // namespace

void parallel_memcpy(ThreadPool &pool, char *dst, const char *src, int64_t bytes) {
  pool.parallel_for(bytes, kCopyChunk, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

void permute(ThreadPool &pool, const void *source, void *destination, const Shape &shape,
             const std::vector<int64_t> &perm, size_t element_size) {
  const int64_t n = shape.numel();
  if (n == 0) return;
  const Transposition t = simplify(shape, perm);
  const auto elem = static_cast<int64_t>(element_size);
  const auto *src = static_cast<const char *>(source);
  auto *dst = static_cast<char *>(destination);
  const size_t r = t.perm.size();
  if (r <= 1) return parallel_memcpy(pool, dst, src, n * elem);
  if (t.perm[r - 1] == static_cast<int64_t>(r - 1)) {
    // Innermost dim stays innermost: copy whole rows.
    std::vector<int64_t> in_strides(r);
    for (size_t d = r, s = 1; d-- > 0;) {
      in_strides[d] = static_cast<int64_t>(s);
      s *= static_cast<size_t>(t.in_dims[d]);
    }
    const int64_t row = t.in_dims[r - 1], rows = n / row, row_bytes = row * elem;
    pool.parallel_for(
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
      return transpose_tiled(pool, reinterpret_cast<const uint8_t *>(src),
                             reinterpret_cast<uint8_t *>(dst), t);
    case 2:
      return transpose_tiled(pool, reinterpret_cast<const uint16_t *>(src),
                             reinterpret_cast<uint16_t *>(dst), t);
    case 4:
      return transpose_tiled(pool, reinterpret_cast<const uint32_t *>(src),
                             reinterpret_cast<uint32_t *>(dst), t);
    case 8:
      return transpose_tiled(pool, reinterpret_cast<const uint64_t *>(src),
                             reinterpret_cast<uint64_t *>(dst), t);
    default:
      fail("unsupported element size ", elem);
  }
}

}  // namespace lumen::cpu
