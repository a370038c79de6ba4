#include "backends/vulkan/vulkan_device.h"

#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

#include "lumen/error.h"

namespace lumen::vulkan {
namespace {

int device_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

struct Opened {
  std::unique_ptr<VulkanDevice> device;
  std::string why_not;
};

}  // namespace

void check(VkResult result, const char *call) {
  if (result != VK_SUCCESS)
    fail("vulkan: ", call, " failed (VkResult ", static_cast<int>(result), ")");
}

bool VulkanDevice::open(std::string &why_not) {
  if (const char *v = std::getenv("LUMEN_VULKAN"); v && std::string(v) == "0") {
    why_not = "LUMEN_VULKAN=0";
    return false;
  }
  VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                        .pApplicationName = "lumen",
                        .pEngineName = "lumen",
                        .apiVersion = VK_API_VERSION_1_2};
  VkInstanceCreateInfo instance_info{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                     .pApplicationInfo = &app};
  if (VkResult r = vkCreateInstance(&instance_info, nullptr, &instance_); r != VK_SUCCESS) {
    why_not = "no Vulkan driver (vkCreateInstance returned " + std::to_string(r) + ")";
    instance_ = VK_NULL_HANDLE;
    return false;
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  std::vector<VkPhysicalDevice> usable;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion >= VK_API_VERSION_1_2) usable.push_back(d);
  }
  if (usable.empty()) {
    why_not = "no Vulkan 1.2 device (" + std::to_string(count) + " devices found)";
    return false;
  }
  if (const char *pick = std::getenv("LUMEN_VULKAN_DEVICE"); pick && *pick) {
    const size_t index = std::strtoul(pick, nullptr, 10);
    if (index >= usable.size()) {
      why_not = "LUMEN_VULKAN_DEVICE=" + std::string(pick) + " but " +
                std::to_string(usable.size()) + " Vulkan 1.2 devices";
      return false;
    }
    physical_ = usable[index];
  } else {
    int best = 99;
    for (VkPhysicalDevice d : usable) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      if (device_rank(p.deviceType) < best) best = device_rank(p.deviceType), physical_ = d;
    }
  }
  VkPhysicalDeviceSubgroupProperties subgroup{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, .pNext = &subgroup};
  VkPhysicalDeviceProperties2 properties2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &driver};
  vkGetPhysicalDeviceProperties2(physical_, &properties2);
  properties_ = properties2.properties;
  subgroup_size_ = subgroup.subgroupSize ? subgroup.subgroupSize : 1;
  constexpr VkSubgroupFeatureFlags kReductions = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                                 VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                                 VK_SUBGROUP_FEATURE_VOTE_BIT;
  subgroup_reductions_ = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (subgroup.supportedOperations & kReductions) == kReductions &&
                         subgroup_size_ >= 4;
  driver_info_ = std::string(driver.driverName) + " " + driver.driverInfo;

  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, family.data());
  bool found = false;
  for (uint32_t i = 0; i < families && !found; ++i)
    if (family[i].queueFlags & VK_QUEUE_COMPUTE_BIT) queue_family_ = i, found = true;
  if (!found) {
    why_not = "the Vulkan device has no compute queue";
    return false;
  }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = queue_family_,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
  VkDeviceCreateInfo device_info{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                 .queueCreateInfoCount = 1,
                                 .pQueueCreateInfos = &queue_info};
  LUMEN_VK(vkCreateDevice(physical_, &device_info, nullptr, &device_));
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory);
  constexpr VkMemoryPropertyFlags kMappable =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int device_type = -1, staging_type = -1;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = memory.memoryTypes[i].propertyFlags;
    // Device-local memory the host can map is only worth it where it is all of the memory (UMA,
    // lavapipe): a discrete GPU's mappable window (ReBAR off) is small.
    const bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    if (local && device_type < 0) device_type = static_cast<int>(i);
    if ((f & kMappable) == kMappable && staging_type < 0) staging_type = static_cast<int>(i);
  }
  if (device_type < 0 || staging_type < 0) {
    why_not = "the Vulkan device lacks device-local or host-visible memory";
    return false;
  }
  device_type_ = static_cast<uint32_t>(device_type);
  staging_type_ = static_cast<uint32_t>(staging_type);
  device_mappable_ = (memory.memoryTypes[device_type_].propertyFlags & kMappable) == kMappable &&
                     properties_.deviceType != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  return true;
}

VulkanDevice::~VulkanDevice() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyDevice(device_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

std::string VulkanDevice::description() const {
  std::ostringstream out;
  out << properties_.deviceName << " / " << driver_info_ << " / driver "
      << properties_.driverVersion << " / api " << VK_API_VERSION_MAJOR(properties_.apiVersion)
      << "." << VK_API_VERSION_MINOR(properties_.apiVersion) << " / subgroups of " << subgroup_size_
      << (subgroup_reductions_ ? " (reductions)" : "");
  return out.str();
}

void VulkanDevice::submit(VkCommandBuffer commands, VkFence done) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  VkSubmitInfo submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                      .commandBufferCount = 1,
                      .pCommandBuffers = &commands};
  LUMEN_VK(vkQueueSubmit(queue_, 1, &submit, done));
}

namespace {
Opened &opened() {
  // Opened once; kept for the process's life (kernels' pipelines and buffers refer to it).
  static Opened *o = [] {
    auto *result = new Opened;
    auto device = std::unique_ptr<VulkanDevice>(new VulkanDevice);
    try {
      if (device->open(result->why_not)) result->device = std::move(device);
    } catch (const Error &e) {
      result->why_not = e.what();
    }
    return result;
  }();
  return *o;
}
}  // namespace

VulkanDevice *vulkan_device() {
  return opened().device.get();
}

std::string vulkan_unavailable_reason() {
  return opened().why_not;
}

}  // namespace lumen::vulkan
