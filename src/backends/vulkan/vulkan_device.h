// The Vulkan device the backend runs on: instance, physical and logical device, one compute
// queue, and what the kernels need to know of it (limits, subgroup size, memory types). Created
// on first use, never at library load: a process that does not place anything on Vulkan never
// touches the loader. LUMEN_VULKAN=0 hides every device; LUMEN_VULKAN_DEVICE=<index> picks one
// (default: the first discrete GPU, else integrated, virtual, then CPU implementations such as
// lavapipe).
#pragma once

#include <vulkan/vulkan.h>

#include <mutex>
#include <string>

namespace lumen::vulkan {

// Throws lumen::Error naming the call and the VkResult.
void check(VkResult result, const char *call);
#define LUMEN_VK(call) ::lumen::vulkan::check((call), #call)

class VulkanDevice {
 public:
  VulkanDevice() = default;
  // Opens the device; false (with the reason) where none is usable.
  bool open(std::string &why_not);
  VulkanDevice(const VulkanDevice &) = delete;
  VulkanDevice &operator=(const VulkanDevice &) = delete;
  ~VulkanDevice();

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  const VkPhysicalDeviceProperties &properties() const { return properties_; }
  uint32_t queue_family() const { return queue_family_; }
  uint32_t subgroup_size() const { return subgroup_size_; }
  // Whether compute shaders may reduce with subgroup operations (arithmetic and vote, subgroups
  // of 4 invocations or more): the _subgroup variants of the reduction shaders.
  bool subgroup_reductions() const { return subgroup_reductions_; }
  // The memory type for tensors (device-local) and whether the host can map it (lavapipe,
  // integrated GPUs); and a host-visible coherent type for staging copies otherwise.
  uint32_t device_memory_type() const { return device_type_; }
  bool device_memory_mappable() const { return device_mappable_; }
  uint32_t staging_memory_type() const { return staging_type_; }
  // "llvmpipe (LLVM 15.0.6, 256 bits) / Mesa 22.3.6 / driver 1 / api 1.3 / subgroups of 8
  // (reductions)": what measurements are keyed by.
  std::string description() const;

  // Submits `commands` to the queue without waiting; `done` (an unsignaled fence) is signaled
  // when they have run. The queue is shared: submissions are serialized.
  void submit(VkCommandBuffer commands, VkFence done);

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  std::string driver_info_;
  uint32_t queue_family_ = 0, subgroup_size_ = 1;
  uint32_t device_type_ = 0, staging_type_ = 0;
  bool device_mappable_ = false, subgroup_reductions_ = false;
  std::mutex queue_mutex_;
};

// The process's Vulkan device, opened on first call; nullptr where none is usable (no loader,
// no driver, LUMEN_VULKAN=0), with the reason in vulkan_unavailable_reason().
VulkanDevice *vulkan_device();
std::string vulkan_unavailable_reason();

}  // namespace lumen::vulkan
