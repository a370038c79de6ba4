#include "backends/vulkan/kernels/strided.h"

#include <cstdlib>
#include <limits>

#include "backends/vulkan/vulkan_stream.h"
#include "vulkan_shaders.h"

namespace lumen::vulkan {

std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out) {
  const std::vector<int64_t> own = contiguous_strides(in);
  std::vector<int64_t> s(out.rank(), 0);
  const size_t shift = out.rank() - in.rank();
  for (size_t d = 0; d < in.rank(); ++d) s[d + shift] = in[d] == 1 ? 0 : own[d];
  return s;
}

std::vector<RegionPiece> collapse(const KernelContext &ctx, const Shape &shape,
                                  const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                                  size_t max_dims) {
  std::vector<int64_t> dims, sa, sb;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && sa.back() == a[d] * shape[d] && sb.back() == b[d] * shape[d]) {
      dims.back() *= shape[d];  // the previous dim steps over this one whole: one dim
      sa.back() = a[d];
      sb.back() = b[d];
      continue;
    }
    dims.push_back(shape[d]);
    sa.push_back(a[d]);
    sb.push_back(b[d]);
  }
  if (shape.numel() == 0) return {};
  const size_t outer = dims.size() > max_dims ? dims.size() - max_dims : 0;
  RegionPiece inner;
  Region &r = inner.region;
  r.rank = static_cast<uint32_t>(dims.size() - outer);
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  for (size_t d = outer; d < dims.size(); ++d) {
    // Strides may be negative (a slice walking backwards): they wrap in the shader's uint math.
    if (dims[d] > kMax || std::abs(sa[d]) > kMax || std::abs(sb[d]) > kMax)
      ctx.fail("a tensor over 2^32 elements is beyond the Vulkan kernels");
    r.shape[d - outer] = static_cast<uint32_t>(dims[d]);
    r.stride[0][d - outer] = static_cast<uint32_t>(sa[d]);
    r.stride[1][d - outer] = static_cast<uint32_t>(sb[d]);
    r.count *= static_cast<uint64_t>(dims[d]);
  }
  std::vector<RegionPiece> pieces{inner};
  for (size_t d = outer; d-- > 0;) {  // every index of the leading dims: a piece each
    std::vector<RegionPiece> more;
    for (int64_t k = 0; k < dims[d]; ++k)
      for (RegionPiece p : pieces) {
        p.offset[0] += k * sa[d];
        p.offset[1] += k * sb[d];
        more.push_back(p);
      }
    pieces = std::move(more);
  }
  return pieces;
}

uint32_t words_per_element(const KernelContext &ctx, DType dtype) {
  const size_t size = dtype_size(dtype);
  if (size == 0 || size % 4 != 0)
    ctx.fail("the Vulkan copy kernels move 32-bit words; ", dtype_name(dtype), " is not");
  return static_cast<uint32_t>(size / 4);
}

void strided_copy(KernelContext &ctx, const Tensor &src, Tensor &dst, const Shape &shape,
                  const std::vector<int64_t> &src_strides, const std::vector<int64_t> &dst_strides,
                  int64_t src_offset, int64_t dst_offset) {
  const uint32_t w = words_per_element(ctx, src.dtype());
  // Elements of w words: one more dim of w contiguous words, every stride times w.
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end()), a, b;
  for (size_t d = 0; d < shape.rank(); ++d) {
    a.push_back(src_strides[d] * w);
    b.push_back(dst_strides[d] * w);
  }
  dims.push_back(w);
  a.push_back(1);
  b.push_back(1);
  struct Push {
    uint32_t n, rank, in_off, out_off;
    uint32_t shape[kMaxDims], in_stride[kMaxDims], out_stride[kMaxDims];
  };
  for (const RegionPiece &piece : collapse(ctx, Shape(dims), a, b)) {
    const Region &r = piece.region;
    if (r.count > std::numeric_limits<uint32_t>::max()) ctx.fail("over 2^32 words to copy");
    Push push{};
    push.n = static_cast<uint32_t>(r.count);
    push.rank = r.rank;
    push.in_off = static_cast<uint32_t>(element_offset(src) * w + src_offset * w + piece.offset[0]);
    push.out_off =
        static_cast<uint32_t>(element_offset(dst) * w + dst_offset * w + piece.offset[1]);
    for (uint32_t d = 0; d < r.rank; ++d) {
      push.shape[d] = r.shape[d];
      push.in_stride[d] = r.stride[0][d];
      push.out_stride[d] = r.stride[1][d];
    }
    const Groups g = groups_for(r.count);
    dispatch(ctx, shaders::strided_copy, {&src, &dst}, push, g.x, g.y);
  }
}

}  // namespace lumen::vulkan
