// Permuting the dims of a contiguous tensor on the CPU (see permute.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/kernel.h"

namespace lumen::cpu {

// memcpy in chunks of 256 KiB shared out over the pool.
void parallel_memcpy(ThreadPool &pool, char *dst, const char *src, int64_t bytes);

// dst = src (contiguous, `shape`) with its dims permuted: output dim i is input dim perm[i]. Any
// element size of 1, 2, 4 or 8 bytes; src and dst must not overlap.
void permute(ThreadPool &pool, const void *src, void *dst, const Shape &shape,
             const std::vector<int64_t> &perm, size_t element_size);

}  // namespace lumen::cpu
