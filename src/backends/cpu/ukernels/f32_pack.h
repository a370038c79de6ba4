// Packing kernels for GEMM operands (gemm/sgemm.cc).
#pragma once

#include <cstdint>

namespace lumen::ukernels {

// dst[p * width + r] = src[r * ld + p] for r < rows, 0 for rows <= r < width; p < kc.
// rows <= width <= 16, and 15 * ld must fit in an int32 (gather offsets).
void f32_pack_rows__avx512(const float *src, int64_t ld, int rows, int64_t kc, int width,
                           float *dst);

}  // namespace lumen::ukernels
