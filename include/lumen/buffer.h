// Memory blocks. A Buffer owns one block on one device and gives it back through its release
// function when destroyed; it is move-only, and tensors share it through std::shared_ptr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "lumen/device.h"

namespace lumen {

class Buffer {
 public:
  // `release(data)` runs exactly once, when the Buffer dies. For foreign memory (a NumPy array)
  // it drops the reference that kept the owner alive.
  using Release = std::function<void(void *)>;

  Buffer(void *data, size_t nbytes, Device device, Release release)
      : data_(data), nbytes_(nbytes), device_(device), release_(std::move(release)) {}
  ~Buffer() {
    if (release_) release_(data_);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer(Buffer &&other) noexcept
      : data_(other.data_),
        nbytes_(other.nbytes_),
        device_(other.device_),
        release_(std::move(other.release_)) {
    other.release_ = nullptr;
  }

  void *data() const { return data_; }
  size_t size() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void *data_;
  size_t nbytes_;
  Device device_;
  Release release_;
};

// Counters of an allocator since process start.
struct AllocatorStats {
  uint64_t allocations = 0;         // allocate() calls
  uint64_t system_allocations = 0;  // of those, the ones the cache could not serve
};

// Hands out buffers on one device. Implementations are thread-safe and must outlive every buffer
// they returned (host allocators are process-lifetime singletons).
class Allocator {
 public:
  static constexpr size_t kAlignment = 64;  // cache line and AVX-512 vector

  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns a block of at least `nbytes` aligned to kAlignment; throws lumen::Error on failure.
  virtual std::shared_ptr<Buffer> allocate(size_t nbytes) = 0;
  virtual AllocatorStats stats() const { return {}; }
};

// The process-wide caching host allocator: freed blocks return to size-class free lists and are
// reused, so steady-state inference does not call malloc.
Allocator &host_allocator();

}  // namespace lumen
