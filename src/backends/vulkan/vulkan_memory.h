// Vulkan memory as Lumen Buffers. A block is one VkBuffer over its own VkDeviceMemory; the planner
// already makes one arena per run and memory space, so blocks are few and large. Each block gets
// a range of addresses of its own, far outside any host pointer (0xF000... upward), that
// Buffer::data() returns: tensors, arena views and byte offsets then work as they do on the host,
// and resolve() turns an address back into (VkBuffer, offset) for binding. Host code must never
// dereference one. Freed blocks are cached by size class for reuse, like the host allocator's.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>

#include "lumen/buffer.h"

namespace lumen::vulkan {

inline constexpr Device kVulkanDevice{DeviceType::Vulkan, 0};

struct Resolved {
  VkBuffer buffer = VK_NULL_HANDLE;
  size_t offset = 0;       // bytes into the buffer
  size_t size = 0;         // bytes of the buffer
  void *mapped = nullptr;  // host address of offset 0 where the memory is mapped, else nullptr
};

// The block holding `address` (a Buffer::data() of this allocator plus an offset); throws for an
// address no live block holds.
Resolved resolve(const void *address);

// How many buffers were destroyed so far (recorded command buffers that may bind one are stale).
uint64_t buffers_destroyed();

// The device-memory allocator (device-local memory).
Allocator &device_allocator();

// A host-visible block for staging copies to and from device memory that the host cannot map,
// and the block holding a staging address.
std::shared_ptr<Buffer> allocate_staging(size_t nbytes);
Resolved resolve_staging(const void *address);

}  // namespace lumen::vulkan
