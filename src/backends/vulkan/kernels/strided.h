// Tensor regions for the shaders that walk up to 6 dims by per-operand element strides
// (binary.comp, strided_copy.comp): NumPy broadcasting as stride 0, size-1 dims dropped and
// adjacent dims merged where every operand is contiguous across them, so most regions need one
// to three dims.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kernel.h"

namespace lumen::vulkan {

inline constexpr size_t kMaxDims = 6;

struct Region {
  uint32_t rank = 0;
  uint32_t shape[kMaxDims] = {};
  uint32_t stride[2][kMaxDims] = {};  // per operand
  uint64_t count = 1;                 // elements in the region
};

// The strides that read a contiguous tensor of shape `in` broadcast to `out` (NumPy rules: dims
// aligned from the right, size 1 broadcast with stride 0).
std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out);

// The region `shape` walked with two operands' strides (one per dim of shape), collapsed. Where
// it still has more than `max_dims` dims, the leading ones are walked here: one piece per index
// of them (in row-major order), each with the element offsets it starts at for the two operands.
// Fails (naming the kernel) for a size or stride over 32 bits.
struct RegionPiece {
  Region region;
  int64_t offset[2] = {0, 0};
};
std::vector<RegionPiece> collapse(const KernelContext &ctx, const Shape &shape,
                                  const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                                  size_t max_dims = kMaxDims);

// Words of 32 bits per element of `dtype` (strided_copy moves words); fails for sizes that are
// not a multiple of 4.
uint32_t words_per_element(const KernelContext &ctx, DType dtype);

// Copies a region of `src` into `dst` (both seen as 32-bit words): `shape` walked with element
// strides of each, from element offsets src_off and dst_off (relative to each tensor's start).
void strided_copy(KernelContext &ctx, const Tensor &src, Tensor &dst, const Shape &shape,
                  const std::vector<int64_t> &src_strides, const std::vector<int64_t> &dst_strides,
                  int64_t src_offset = 0, int64_t dst_offset = 0);

}  // namespace lumen::vulkan
