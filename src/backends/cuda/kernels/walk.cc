#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {

std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out) {
  std::vector<int64_t> s(out.rank(), 0);
  const std::vector<int64_t> own = contiguous_strides(in);
  const size_t shift = out.rank() - in.rank();
  for (size_t d = 0; d < in.rank(); ++d) s[d + shift] = in[d] == 1 ? 0 : own[d];
  return s;
}

Walk make_walk(const KernelContext &ctx, const Shape &shape, const std::vector<int64_t> &a,
               const std::vector<int64_t> &b) {
  Walk w;
  w.count = shape.numel();
  std::vector<int64_t> dims, sa, sb;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && sa.back() == a[d] * shape[d] && sb.back() == b[d] * shape[d]) {
      dims.back() *= shape[d];
      sa.back() = a[d], sb.back() = b[d];
      continue;
    }
    dims.push_back(shape[d]), sa.push_back(a[d]), sb.push_back(b[d]);
  }
  const int rank = static_cast<int>(dims.size());
  if (rank > kMaxDims)
    ctx.fail("the CUDA element-wise kernels walk up to ", kMaxDims, " dims; ", shape.to_string(),
             " needs ", rank);
  w.rank = rank;
  for (int d = 0; d < rank; ++d)
    w.shape[d] = dims[d], w.stride[0][d] = sa[d], w.stride[1][d] = sb[d];
  return w;
}

void check_launch(const KernelContext &ctx, cudaError_t result) {
  if (result != cudaSuccess) {
    cudaGetLastError();
    ctx.fail("CUDA kernel launch failed: ", cudaGetErrorName(result), " (",
             cudaGetErrorString(result), ")");
  }
}

}  // namespace lumen::cuda
