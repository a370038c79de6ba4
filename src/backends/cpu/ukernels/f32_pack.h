// Packing kernels for GEMM operands (gemm/sgemm.cc).
#pragma once

#include <cstdint>

namespace lumen::ukernels {

// dst[p * dst_ld + r] = src[r * ld + p] for r < rows, 0 for rows <= r < width; p < kc.
// 0 <= rows <= width <= 16, width <= dst_ld.
void f32_pack_rows__avx512(const float *src, int64_t ld, int rows, int64_t kc, int width,
                           float *dst, int64_t dst_ld);

// The same with AVX2: rows <= width <= 8; writes only dst[0, kc * width).
void f32_pack_rows__avx2(const float *src, int64_t ld, int rows, int64_t kc, int width, float *dst);

// dst[p * 32 + j] = base[row_offsets[p] + j] for j < cols, 0 for cols <= j < 32; p < kc. Reads
// nothing past column `cols` of a row; dst 64-byte aligned.
void f32_pack_row_table_32__avx512(const float *base, const int64_t *row_offsets, int64_t kc,
                                   int cols, float *dst);
// The same with row p at src + p * ld.
void f32_pack_strided_rows_32__avx512(const float *src, int64_t ld, int64_t kc, int cols,
                                      float *dst);

// The same for 16-column panels (AVX2); dst 32-byte aligned.
void f32_pack_row_table_16__avx2(const float *base, const int64_t *row_offsets, int64_t kc,
                                 int cols, float *dst);
void f32_pack_strided_rows_16__avx2(const float *src, int64_t ld, int64_t kc, int cols, float *dst);

// dst[c * plane + q] = src[q * channels + c] for q < pixels, c < channels: channels-last pixels
// into channel planes.
void f32_transpose_to_planes__avx2(const float *src, int64_t pixels, int64_t channels, float *dst,
                                   int64_t plane);

}  // namespace lumen::ukernels
