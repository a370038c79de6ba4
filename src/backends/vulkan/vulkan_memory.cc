#include "backends/vulkan/vulkan_memory.h"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "backends/vulkan/vulkan_device.h"
#include "lumen/error.h"
#include "lumen/memory_budget.h"

namespace lumen::vulkan {
namespace {

constexpr uintptr_t kFirstAddress = uintptr_t{0xF} << 60;
constexpr size_t kBlockAlignment = 256;
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

size_t size_class(size_t nbytes) {
  if (nbytes <= 65536) return (std::max<size_t>(nbytes, 1) + 255) / 256 * 256;
  size_t power = 65536;
  while (power < nbytes / 2) power *= 2;
  const size_t step = power / 4;
  return (nbytes + step - 1) / step * step;
}

std::atomic<uint64_t> g_destroyed{0};

struct Block {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  size_t size = 0;
  void *mapped = nullptr;
};

// Blocks by their address, and the cache of free ones by size class.
class BlockPool {
 public:
  explicit BlockPool(bool staging) : staging_(staging) {}

  std::shared_ptr<Buffer> allocate(size_t nbytes, Device device) {
    const size_t cls = size_class(nbytes);
    uintptr_t address = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        address = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= cls;
      }
    }
    if (!address) address = create(cls);
    return std::make_shared<Buffer>(reinterpret_cast<void *>(address), nbytes, device,
                                    [this, cls](void *data) { release(data, cls); });
  }

  bool find(uintptr_t address, Resolved &out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return false;
    --it;
    if (address >= it->first + it->second.size) return false;
    out = {it->second.buffer, static_cast<size_t>(address - it->first), it->second.size,
           it->second.mapped};
    return true;
  }

 private:
  uintptr_t create(size_t bytes) {
    VulkanDevice *dev = vulkan_device();
    if (!dev) fail("vulkan: no device (", vulkan_unavailable_reason(), ")");
    check_memory_budget(bytes, "a Vulkan buffer");
    Block block{.size = bytes};
    VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                            .size = bytes,
                            .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    LUMEN_VK(vkCreateBuffer(dev->device(), &info, nullptr, &block.buffer));
    VkMemoryRequirements needs;
    vkGetBufferMemoryRequirements(dev->device(), block.buffer, &needs);
    const uint32_t type = staging_ ? dev->staging_memory_type() : dev->device_memory_type();
    if (!(needs.memoryTypeBits & (1u << type))) {
      vkDestroyBuffer(dev->device(), block.buffer, nullptr);
      fail("vulkan: the buffer cannot live in memory type ", type);
    }
    VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = needs.size,
                               .memoryTypeIndex = type};
    if (VkResult r = vkAllocateMemory(dev->device(), &alloc, nullptr, &block.memory);
        r != VK_SUCCESS) {
      vkDestroyBuffer(dev->device(), block.buffer, nullptr);
      fail("vulkan: out of device memory allocating ", bytes, " bytes (VkResult ", r, ")");
    }
    LUMEN_VK(vkBindBufferMemory(dev->device(), block.buffer, block.memory, 0));
    if (staging_ || dev->device_memory_mappable())
      LUMEN_VK(vkMapMemory(dev->device(), block.memory, 0, VK_WHOLE_SIZE, 0, &block.mapped));
    std::lock_guard<std::mutex> lock(mutex_);
    const uintptr_t address = next_;
    next_ += (bytes + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment + kBlockAlignment;
    blocks_[address] = block;
    return address;
  }

  void release(void *data, size_t cls) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(data);
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_bytes_ + cls <= kMaxCachedBytes) {
      free_[cls].push_back(address);
      cached_bytes_ += cls;
      return;
    }
    const Block block = blocks_.at(address);
    blocks_.erase(address);
    VkDevice dev = vulkan_device()->device();
    ++g_destroyed;
    vkDestroyBuffer(dev, block.buffer, nullptr);
    vkFreeMemory(dev, block.memory, nullptr);
  }

  const bool staging_;
  std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;
  std::map<size_t, std::vector<uintptr_t>> free_;
  size_t cached_bytes_ = 0;
  uintptr_t next_ = kFirstAddress;
};

BlockPool &device_pool() {
  static auto *pool = new BlockPool(false);
  return *pool;
}
BlockPool &staging_pool() {
  static auto *pool = new BlockPool(true);
  return *pool;
}

class PoolAllocator final : public Allocator {
 public:
  PoolAllocator(BlockPool &pool, Device device) : pool_(pool), device_(device) {}
  Device device() const override { return device_; }
  std::shared_ptr<Buffer> allocate(size_t nbytes) override {
    return pool_.allocate(nbytes, device_);
  }

 private:
  BlockPool &pool_;
  Device device_;
};

}  // namespace

Resolved resolve(const void *address) {
  Resolved out;
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  if (device_pool().find(a, out)) return out;
  fail("vulkan: address ", address, " is not in Vulkan device memory");
}

uint64_t buffers_destroyed() {
  return g_destroyed;
}

Allocator &device_allocator() {
  static PoolAllocator allocator(device_pool(), kVulkanDevice);
  return allocator;
}

std::shared_ptr<Buffer> allocate_staging(size_t nbytes) {
  return staging_pool().allocate(nbytes, kVulkanDevice);
}

Resolved resolve_staging(const void *address) {
  Resolved out;
  if (staging_pool().find(reinterpret_cast<uintptr_t>(address), out)) return out;
  fail("vulkan: address ", address, " is not a staging block");
}

}  // namespace lumen::vulkan
