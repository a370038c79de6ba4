#include "backends/cuda/cuda_memory.h"

#include <map>
#include <mutex>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "lumen/error.h"

namespace lumen::cuda {
namespace {

// Blocks below 1 MiB round up to 512 bytes, larger ones to 2 MiB: few classes, little waste.
size_t size_class(size_t nbytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20;
  const size_t step = nbytes < (size_t{1} << 20) ? kSmall : kLarge;
  if (nbytes > SIZE_MAX - step) fail("CUDA allocation of ", nbytes, " bytes is too large");
  return std::max(step, (nbytes + step - 1) / step * step);
}

// A cache of freed blocks by size class over an allocate/free pair of the CUDA runtime.
class BlockCache {
 public:
  using Malloc = cudaError_t (*)(void **, size_t);
  using Free = cudaError_t (*)(void *);
  BlockCache(const char *what, Malloc allocate, Free release, Device device)
      : what_(what), malloc_(allocate), free_(release), device_(device) {}

  std::shared_ptr<Buffer> allocate(size_t nbytes) {
    const size_t size = size_class(nbytes);
    void *block = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.allocations;
      if (auto it = free_blocks_.find(size); it != free_blocks_.end()) {
        block = it->second;
        free_blocks_.erase(it);
      }
    }
    if (!block) block = fresh(size);
    return std::make_shared<Buffer>(block, nbytes, device_, [this, size](void *p) {
      std::lock_guard<std::mutex> lock(mutex_);
      free_blocks_.emplace(size, p);
    });
  }
  AllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  void *fresh(size_t size) {
    active_device();
    void *block = nullptr;
    cudaError_t e = malloc_(&block, size);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached();  // other size classes may hold what this one needs
      e = malloc_(&block, size);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      fail("CUDA: allocating ", size, " bytes of ", what_, " failed: ", cudaGetErrorString(e),
           " (device memory free: ", free_bytes, " of ", total, " bytes)");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.system_allocations;
    return block;
  }
  void release_cached() {
    std::multimap<size_t, void *> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(free_blocks_);
    }
    // Work still queued may use a cached block: a block is only cached once its buffer died,
    // and streams retain buffers until the work reading them has run (cuda_stream.h).
    for (const auto &[size, p] : blocks) free_(p);
  }

  const char *what_;
  Malloc malloc_;
  Free free_;
  Device device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void *> free_blocks_;
  AllocatorStats stats_;
};

class DeviceAllocator final : public Allocator {
 public:
  Device device() const override { return kCudaDevice; }
  std::shared_ptr<Buffer> allocate(size_t nbytes) override { return cache_.allocate(nbytes); }
  AllocatorStats stats() const override { return cache_.stats(); }

 private:
  BlockCache cache_{"device memory", [](void **p, size_t n) { return cudaMalloc(p, n); }, cudaFree,
                    kCudaDevice};
};

}  // namespace

Allocator &device_allocator() {
  static auto *a = new DeviceAllocator;  // outlives every buffer (never destroyed)
  return *a;
}

std::shared_ptr<Buffer> allocate_pinned(size_t nbytes) {
  static auto *cache = new BlockCache(
      "page-locked host memory", [](void **p, size_t n) { return cudaMallocHost(p, n); },
      cudaFreeHost, kHostDevice);
  return cache->allocate(nbytes);
}

}  // namespace lumen::cuda
