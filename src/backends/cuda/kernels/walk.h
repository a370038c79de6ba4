// Building the element-wise kernels' walks (launch.h) on the host, and checking launches.
#pragma once

#include <vector>

#include "backends/cuda/kernels/launch.h"
#include "core/kernel.h"

namespace lumen::cuda {

// Element strides that read a contiguous tensor of shape `in` broadcast to `out` (NumPy rules).
std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out);

// The walk over `shape` with two or three operands' strides, size-1 dims dropped and adjacent
// dims merged where every operand steps evenly across them. Fails (naming the node) past
// kMaxDims.
Walk make_walk(const KernelContext &ctx, const Shape &shape, const std::vector<int64_t> &a,
               const std::vector<int64_t> &b, const std::vector<int64_t> &c = {});
// The element type of a kernel taking several (launch.h); fails for others.
int element_type(const KernelContext &ctx, DType dtype);

// Fails naming the node where a launch failed.
void check_launch(const KernelContext &ctx, cudaError_t result);

template <class T = float>
const T *device_data(const Tensor &t) {
  return static_cast<const T *>(t.raw_data());
}
template <class T = float>
T *device_data(Tensor &t) {
  return static_cast<T *>(t.raw_data());
}

}  // namespace lumen::cuda
