// The AVX-512 mask of a vector's first `count` lanes (all 16 from 16 on, none at 0 or below):
// edge tiles, row tails and partial channel blocks. Integer work only, so it may be included by
// any file that includes <immintrin.h> on x86-64.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lumen::ukernels {

inline __mmask16 first_lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

}  // namespace lumen::ukernels
