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
               const std::vector<int64_t> &b, const std::vector<int64_t> &c) {
  const std::vector<int64_t> none(shape.rank(), 0);
  const std::vector<int64_t> *operands[3] = {&a, &b, c.empty() ? &none : &c};
  Walk w;
  w.count = shape.numel();
  std::vector<int64_t> dims;
  std::vector<int64_t> strides[3];
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    bool merges = !dims.empty();
    for (int o = 0; o < 3 && merges; ++o)
      merges = strides[o].back() == (*operands[o])[d] * shape[d];
    if (merges) {
      dims.back() *= shape[d];
      for (int o = 0; o < 3; ++o) strides[o].back() = (*operands[o])[d];
      continue;
    }
    dims.push_back(shape[d]);
    for (int o = 0; o < 3; ++o) strides[o].push_back((*operands[o])[d]);
  }
  const int rank = static_cast<int>(dims.size());
  if (rank > kMaxDims)
    ctx.fail("the CUDA element-wise kernels walk up to ", kMaxDims, " dims; ", shape.to_string(),
             " needs ", rank);
  w.rank = rank;
  for (int d = 0; d < rank; ++d) {
    w.shape[d] = dims[d];
    for (int o = 0; o < 3; ++o) w.stride[o][d] = strides[o][d];
  }
  return w;
}

int element_type(const KernelContext &ctx, DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return kF32;
    case DType::Float16:
      return kF16;
    case DType::BFloat16:
      return kBF16;
    case DType::Float64:
      return kF64;
    case DType::Int8:
      return kI8;
    case DType::Int32:
      return kI32;
    case DType::Int64:
      return kI64;
    case DType::UInt8:
      return kU8;
    case DType::Bool:
      return kBool;
    default:
      ctx.fail("the CUDA kernel takes no ", dtype_name(dtype));
  }
}

void check_launch(const KernelContext &ctx, cudaError_t result) {
  if (result != cudaSuccess) {
    cudaGetLastError();
    ctx.fail("CUDA kernel launch failed: ", cudaGetErrorName(result), " (",
             cudaGetErrorString(result), ")");
  }
}

}  // namespace lumen::cuda
