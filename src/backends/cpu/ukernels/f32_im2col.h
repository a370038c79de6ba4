// Copy kernels for packing im2col panels (kernels/im2col_panels.cc): one run of a panel row.
#pragma once

#include <cstdint>

namespace lumen::ukernels {

// out[i] = row[ix0 + i] for lo <= i < hi, 0 for the other i < count (count <= 64). Lanes outside
// [lo, hi) are never read, so row + ix0 may point before the row. Stride-1 convolutions only.
void f32_im2col_segment__avx512(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                                float *out);
// The same for stride 2: out[i] = row[ix0 + 2 * i] for lo <= i < hi.
void f32_im2col_segment_s2__avx512(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                                   float *out);

// The same with AVX2 (count <= 64): `room` >= count floats are writable from out, and whatever
// lands in out[count, room) is garbage the caller overwrites.
void f32_im2col_segment__avx2(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                              int room, float *out);
void f32_im2col_segment_s2__avx2(const float *row, int64_t ix0, int64_t lo, int64_t hi, int count,
                                 int room, float *out);

}  // namespace lumen::ukernels
