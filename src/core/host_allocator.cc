// Caching host allocator. Blocks are rounded up to a size class (64-byte multiples for small
// blocks, quarter powers of two above 64 KiB) and kept on per-class free lists when released, up to
// a cap, so repeated inferences reuse memory instead of calling the system allocator. A request
// takes the smallest cached block of at most twice its class: tensors that grow a little from run
// to run (a KV cache one token longer each step) reuse the blocks the previous run freed instead
// of asking the system for new memory every time.
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "lumen/buffer.h"
#include "lumen/error.h"
#include "lumen/memory_budget.h"

namespace lumen {
namespace {

constexpr size_t kMaxCachedBytes = size_t{1} << 30;

size_t size_class(size_t nbytes) {
  if (nbytes == 0) nbytes = 1;
  if (nbytes <= 65536) return (nbytes + 63) / 64 * 64;
  size_t power = 65536;
  while (power < nbytes / 2) power *= 2;  // power <= nbytes < 4 * power ... refine in quarters
  size_t step = power / 4;
  return (nbytes + step - 1) / step * step;
}

class CachingHostAllocator final : public Allocator {
 public:
  Device device() const override { return kHostDevice; }

  std::shared_ptr<Buffer> allocate(size_t nbytes) override {
    allocations_.fetch_add(1, std::memory_order_relaxed);
    const size_t cls = size_class(nbytes);
    size_t block = cls;
    void *data = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.lower_bound(cls);
      if (it != free_.end() && it->first <= 2 * cls) {
        block = it->first;
        data = it->second.back();
        it->second.pop_back();
        if (it->second.empty()) free_.erase(it);
        cached_bytes_ -= block;
      }
    }
    if (!data) {
      if (nbytes > memory_budget()) check_memory_budget(nbytes, "a host allocation");
      system_allocations_.fetch_add(1, std::memory_order_relaxed);
      data = std::aligned_alloc(kAlignment, cls);
      if (!data) fail("host allocation of ", nbytes, " bytes failed");
    }
    return std::make_shared<Buffer>(data, nbytes, kHostDevice,
                                    [this, block](void *p) { release(p, block); });
  }

  AllocatorStats stats() const override {
    return {allocations_.load(std::memory_order_relaxed),
            system_allocations_.load(std::memory_order_relaxed)};
  }

 private:
  void release(void *data, size_t cls) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_bytes_ + cls > kMaxCachedBytes) {
      std::free(data);
      return;
    }
    free_[cls].push_back(data);
    cached_bytes_ += cls;
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void *>> free_;  // by block size; no empty lists
  size_t cached_bytes_ = 0;
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> system_allocations_{0};
};

}  // namespace

Allocator &host_allocator() {
  // Never destroyed: buffers released during static destruction must still find it.
  static auto *allocator = new CachingHostAllocator();
  return *allocator;
}

}  // namespace lumen
