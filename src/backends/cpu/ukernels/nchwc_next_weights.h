// The next call's weights (NchwcConvTile::next_w), prefetched into L2 across this call's tiles:
// each tile takes the share of its pixels, a few lines per input block, so the fetch from memory
// overlaps the multiply-adds instead of stalling the next call's first tile. x86-64 only, for the
// tiles built with AVX2 or AVX-512.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/ukernels/f32_nchwc.h"

namespace lumen::ukernels {

// Lines [line, end) of the next call's weights, `per_step` prefetched per step of the tile.
struct NextWeights {
  uintptr_t line, end;
  int64_t per_step = 0;

  // Pixels [done, done + n) of the call's `all`: their share. (Addresses, not pointers: the next
  // weights are only prefetched, never read, and a prefetch never faults.)
  NextWeights(const NchwcConvTile &p, int64_t done, int64_t n, int64_t all) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p.next_w);
    const int64_t bytes = p.next_w ? p.next_w_floats * int64_t(sizeof(float)) : 0;
    line = (at + uintptr_t(bytes * done / all)) & ~uintptr_t{63};  // the line holding the start
    end = at + uintptr_t(bytes * (done + n) / all);
  }
  // Spreads the share over a tile of `steps` steps.
  void spread(int64_t steps) { per_step = (int64_t((end - line) / 64) + steps) / steps; }
  void step() {
    for (int64_t i = 0; i < per_step && line < end; ++i, line += 64)
      _mm_prefetch(reinterpret_cast<const char *>(line), _MM_HINT_T1);
  }
};

}  // namespace lumen::ukernels
