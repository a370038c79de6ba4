// CUDA memory as Lumen Buffers. Device blocks come from cudaMalloc once and are cached by size
// class when freed, so a steady-state run (whose arena the planner sized) calls cudaMalloc no
// more; where cudaMalloc runs out, the cache is returned to the driver and the allocation tried
// again. Buffer::data() is the device address: host code must never dereference it.
// Page-locked host blocks for staging copies are cached the same way.
#pragma once

#include <memory>

#include "lumen/buffer.h"

namespace lumen::cuda {

// The device-memory allocator.
Allocator &device_allocator();

// A page-locked host block of at least `nbytes` (copies from it run asynchronously).
std::shared_ptr<Buffer> allocate_pinned(size_t nbytes);

}  // namespace lumen::cuda
