// Memory a later kernel call will read (the next call's weights), fetched into L2 across this
// call's tiles: each tile takes its share, a few lines per step, so the fetch from memory overlaps
// the multiply-adds instead of stalling the later call's first tile. Constant weights come from
// memory once per model run (ResNet-50: 100 MB, BERT-base: 340 MB), and read first by the tile
// that needs them they are read at the tile's pace, faster than one core's share of the memory
// bandwidth.
#pragma once

#include <cstdint>

namespace lumen::ukernels {

// Lines [line, end) of the memory, `per_step` prefetched per step. Addresses, not pointers: the
// memory is only prefetched, never read, and a prefetch never faults.
struct L2PrefetchShare {
  uintptr_t line = 0, end = 0;
  int64_t per_step = 0;

  L2PrefetchShare() = default;
  // Parts [done, done + n) of `all` equal parts of `bytes` bytes at `at` (nullptr: nothing).
  L2PrefetchShare(const void *at, int64_t bytes, int64_t done, int64_t n, int64_t all) {
    if (!at || bytes <= 0 || all <= 0) return;
    const uintptr_t base = reinterpret_cast<uintptr_t>(at);
    line = (base + uintptr_t(bytes * done / all)) & ~uintptr_t{63};  // the line holding the start
    end = base + uintptr_t(bytes * (done + n) / all);
  }
  // Spreads the share over a tile of `steps` steps.
  void spread(int64_t steps) {
    per_step = line < end ? (int64_t((end - line) / 64) + steps) / steps : 0;
  }
  void step() {
    for (int64_t i = 0; i < per_step && line < end; ++i, line += 64)
      __builtin_prefetch(reinterpret_cast<const void *>(line), 0, 2);  // into L2 (x86: prefetcht1)
  }
};

}  // namespace lumen::ukernels
