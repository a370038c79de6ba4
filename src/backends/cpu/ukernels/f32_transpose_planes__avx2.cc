// Channels-last pixels into channel planes by 8x8 transposes in registers (fused_conv_window's
// outputs into NCHW).
#include "backends/cpu/ukernels/f32_pack.h"

// Built with this ISA's flags on x86-64 only; see f32_gemm_6x16__avx2.cc.
#if defined(__AVX2__)
#include <immintrin.h>

#include "backends/cpu/ukernels/avx2_vectors.h"

namespace lumen::ukernels {

void f32_transpose_to_planes__avx2(const float *src, int64_t pixels, int64_t channels, float *dst,
                                   int64_t plane) {
  int64_t q = 0;
  for (; q + 8 <= pixels; q += 8) {
    int64_t c = 0;
    for (; c + 8 <= channels; c += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (q + i) * channels + c);
      transpose8x8(r);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (c + j) * plane + q, r[j]);
    }
    for (; c < channels; ++c)
      for (int i = 0; i < 8; ++i) dst[c * plane + q + i] = src[(q + i) * channels + c];
  }
  for (; q < pixels; ++q)
    for (int64_t c = 0; c < channels; ++c) dst[c * plane + q] = src[q * channels + c];
}

}  // namespace lumen::ukernels

#endif  // __AVX2__
