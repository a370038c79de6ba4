// The memory planner: places buffers with known lifetimes at offsets in one arena per memory
// space so that buffers alive at the same step never overlap. It knows nothing of graphs (the
// compiler turns values into lifetimes), so it is tested alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen {

struct BufferLifetime {
  int64_t first_step = 0;  // the step that writes the buffer
  int64_t last_step = 0;   // the last step that reads it (>= first_step)
  size_t bytes = 0;
  int memory_space = 0;  // arenas are planned per space: 0, 1, ...
  // Index of a buffer this one may overwrite in place (an element-wise step writing over its
  // input): honoured when that buffer's last reader is this buffer's writer, it is at least as
  // large, in the same space, and no other buffer took it over already.
  int in_place_of = -1;
  // Index of a buffer this one is a view of (a reshape: the same bytes under another shape). It
  // shares that buffer's block, which then lives until both are dead.
  int view_of = -1;
  // Index of a buffer this one is a part of: bytes [part_offset, part_offset + bytes) of it (a
  // concat's input written straight into the concat's output, so the concat copies nothing).
  // Parts may nest. The outermost buffer's block then lives from the first write of any of its
  // parts to the last read of any; it and its parts neither overwrite nor view other buffers, and
  // no buffer overwrites or views a part.
  int part_of = -1;
  size_t part_offset = 0;
};

struct MemorySpacePlan {
  size_t naive_bytes = 0;        // every buffer in its own block
  size_t planned_bytes = 0;      // the arena size
  size_t lower_bound_bytes = 0;  // most bytes alive at one step (after in-place sharing)
};

struct MemoryPlan {
  static constexpr size_t kAlignment = 64;  // every offset; sizes are rounded up to it
  std::vector<size_t> offsets;              // per buffer, within its space's arena
  std::vector<MemorySpacePlan> spaces;      // indexed by memory_space
  size_t in_place = 0;                      // buffers written over their input's block
  size_t views = 0;                         // buffers sharing a block as views
  size_t parts = 0;                         // buffers placed inside another (concat inputs)
};

// Greedy placement: each buffer goes to the best-fitting gap among the placed buffers that overlap
// it in time, trying a few orders (largest first, first use first, longest-lived first, largest
// size x lifetime first) and keeping the smallest arena per space. Throws lumen::Error on invalid
// lifetimes.
MemoryPlan plan_memory(const std::vector<BufferLifetime> &buffers);

}  // namespace lumen
