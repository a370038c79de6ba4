// Packing a row-major A block into the AVX2 micro-kernel's panel layout is a transpose: panel step
// p holds column p of `rows` rows. Eight steps at a time: eight loads, an 8x8 transpose in
// registers and eight overlapping stores, instead of `rows` scalar copies per step (a MatMul whose
// A is an activation packs all of it for every column block).
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_6x16__avx2.cc.
#if defined(__AVX2__)
#include <immintrin.h>

#include "backends/cpu/ukernels/avx2_vectors.h"

namespace lumen::ukernels {

void f32_pack_rows__avx2(const float *src, int64_t ld, int rows, int64_t kc, int width,
                         float *dst) {
  int64_t p = 0;
  // A step's 8-lane store runs width <= 8 lanes into the next step, which overwrites them: the
  // last step of the block is stored by the scalar loop, so nothing past dst is written.
  for (; p + 8 < kc; p += 8, dst += 8 * width) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i)
      r[i] = i < rows ? _mm256_loadu_ps(src + i * ld + p) : _mm256_setzero_ps();
    transpose8x8(r);
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * width, r[i]);
  }
  for (; p < kc; ++p, dst += width)
    for (int i = 0; i < width; ++i) dst[i] = i < rows ? src[i * ld + p] : 0.0f;
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
