#include "backends/vulkan/vulkan_stream.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "backends/vulkan/vulkan_device.h"
#include "backends/vulkan/vulkan_memory.h"

namespace lumen::vulkan {
namespace {

constexpr uint32_t kSetsPerPool = 512;
constexpr uint32_t kMaxBindings = 8;

struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
};

// Pipelines by shader, made on first use and kept for the process (the device is never closed).
const Pipeline &pipeline_for(const Shader &shader, uint32_t bindings) {
  static std::mutex mutex;
  static auto *pipelines = new std::map<const Shader *, Pipeline>;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = pipelines->find(&shader); it != pipelines->end()) {
    if (it->second.bindings != bindings)
      fail("vulkan: shader '", shader.name, "' dispatched with ", bindings, " buffers, made for ",
           it->second.bindings);
    return it->second;
  }
  VkDevice dev = vulkan_device()->device();
  Pipeline p{.bindings = bindings};
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    slots[i] = {.binding = i,
                .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo set_info{
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = bindings,
      .pBindings = slots.data()};
  LUMEN_VK(vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &p.set_layout));
  VkPushConstantRange push{
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = kMaxPushBytes};
  VkPipelineLayoutCreateInfo layout_info{.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                         .setLayoutCount = 1,
                                         .pSetLayouts = &p.set_layout,
                                         .pushConstantRangeCount = 1,
                                         .pPushConstantRanges = &push};
  LUMEN_VK(vkCreatePipelineLayout(dev, &layout_info, nullptr, &p.layout));
  VkShaderModuleCreateInfo module_info{.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = shader.bytes,
                                       .pCode = shader.words};
  VkShaderModule module;
  LUMEN_VK(vkCreateShaderModule(dev, &module_info, nullptr, &module));
  VkComputePipelineCreateInfo info{
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = "main"},
      .layout = p.layout};
  const VkResult made =
      vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline);
  vkDestroyShaderModule(dev, module, nullptr);
  LUMEN_VK(made);
  return (*pipelines)[&shader] = p;
}

VulkanDevice &device_or_fail() {
  VulkanDevice *dev = vulkan_device();
  if (!dev) fail("vulkan: no device (", vulkan_unavailable_reason(), ")");
  return *dev;
}

}  // namespace

VulkanStream::VulkanStream() {
  VulkanDevice &dev = device_or_fail();
  VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = dev.queue_family()};
  LUMEN_VK(vkCreateCommandPool(dev.device(), &pool_info, nullptr, &pool_));
  VkCommandBufferAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = pool_,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  LUMEN_VK(vkAllocateCommandBuffers(dev.device(), &alloc, &commands_));
  VkDescriptorPoolSize size{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                            .descriptorCount = kSetsPerPool * kMaxBindings};
  VkDescriptorPoolCreateInfo dp{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                .maxSets = kSetsPerPool,
                                .poolSizeCount = 1,
                                .pPoolSizes = &size};
  LUMEN_VK(vkCreateDescriptorPool(dev.device(), &dp, nullptr, &descriptors_));
}

VulkanStream::~VulkanStream() {
  VkDevice dev = vulkan_device()->device();
  try {
    synchronize();
  } catch (const Error &) {  // a destructor must not throw; the error was seen by whoever waited
  }
  vkDestroyDescriptorPool(dev, descriptors_, nullptr);
  vkDestroyCommandPool(dev, pool_, nullptr);
}

Device VulkanStream::device() const {
  return kVulkanDevice;
}

void VulkanStream::begin_if_needed() {
  if (recording_) return;
  VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  LUMEN_VK(vkBeginCommandBuffer(commands_, &begin));
  recording_ = true;
}

void VulkanStream::synchronize() {
  if (!recording_) return;
  recording_ = false;
  LUMEN_VK(vkEndCommandBuffer(commands_));
  VulkanDevice &dev = *vulkan_device();
  dev.submit_and_wait(commands_);
  LUMEN_VK(vkResetCommandBuffer(commands_, 0));
  LUMEN_VK(vkResetDescriptorPool(dev.device(), descriptors_, 0));
  sets_used_ = 0;
  retained_.clear();
}

void VulkanStream::dispatch(const Shader &shader, const std::vector<const Tensor *> &tensors,
                            const void *push, size_t push_bytes, uint32_t groups_x,
                            uint32_t groups_y, uint32_t groups_z) {
  if (tensors.empty() || tensors.size() > kMaxBindings)
    fail("vulkan: shader '", shader.name, "' with ", tensors.size(), " buffers");
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;  // nothing to compute
  const auto &limits = vulkan_device()->properties().limits;
  if (groups_x > limits.maxComputeWorkGroupCount[0] ||
      groups_y > limits.maxComputeWorkGroupCount[1] ||
      groups_z > limits.maxComputeWorkGroupCount[2])
    fail("vulkan: shader '", shader.name, "' needs ", groups_x, "x", groups_y, "x", groups_z,
         " workgroups, over the device's limit");
  const Pipeline &p = pipeline_for(shader, static_cast<uint32_t>(tensors.size()));
  if (sets_used_ == kSetsPerPool) synchronize();  // the pool is spent: run what is recorded
  begin_if_needed();
  VkDevice dev = vulkan_device()->device();
  VkDescriptorSetAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                    .descriptorPool = descriptors_,
                                    .descriptorSetCount = 1,
                                    .pSetLayouts = &p.set_layout};
  VkDescriptorSet set;
  LUMEN_VK(vkAllocateDescriptorSets(dev, &alloc, &set));
  ++sets_used_;
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet writes[kMaxBindings];
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Resolved r = resolve(tensors[i]->raw_data());
    infos[i] = {.buffer = r.buffer, .offset = 0, .range = VK_WHOLE_SIZE};
    writes[i] = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                 .dstSet = set,
                 .dstBinding = static_cast<uint32_t>(i),
                 .descriptorCount = 1,
                 .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                 .pBufferInfo = &infos[i]};
  }
  vkUpdateDescriptorSets(dev, static_cast<uint32_t>(tensors.size()), writes, 0, nullptr);
  vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                          nullptr);
  unsigned char data[kMaxPushBytes] = {};
  std::memcpy(data, push, std::min(push_bytes, kMaxPushBytes));
  vkCmdPushConstants(commands_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushBytes, data);
  vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
  // The next dispatch may read what this one wrote (or overwrite what it read).
  VkMemoryBarrier barrier{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT};
  vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
}

void VulkanStream::copy_buffer(VkBuffer src, size_t src_offset, VkBuffer dst, size_t dst_offset,
                               size_t bytes) {
  if (bytes == 0) return;
  begin_if_needed();
  VkBufferCopy region{.srcOffset = src_offset, .dstOffset = dst_offset, .size = bytes};
  vkCmdCopyBuffer(commands_, src, dst, 1, &region);
  VkMemoryBarrier barrier{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT};
  vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                           VK_PIPELINE_STAGE_HOST_BIT,
                       0, 1, &barrier, 0, nullptr, 0, nullptr);
}

uint32_t element_offset(const Tensor &t) {
  const Resolved r = resolve(t.raw_data());
  const size_t size = dtype_size(t.dtype());
  if (r.offset % size != 0 || r.offset / size > UINT32_MAX)
    fail("vulkan: tensor at byte ", r.offset, " of its buffer is not addressable as ",
         dtype_name(t.dtype()));
  return static_cast<uint32_t>(r.offset / size);
}

Groups groups_for(uint64_t n) {
  const uint64_t groups = (n + 255) / 256;
  Groups g;
  g.x = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535));
  g.y = static_cast<uint32_t>((groups + g.x - 1) / std::max<uint32_t>(g.x, 1));
  if (groups == 0) g.x = g.y = 0;
  return g;
}

Groups row_groups(uint64_t rows) {
  Groups g;
  g.x = static_cast<uint32_t>(std::min<uint64_t>(rows, 65535));
  g.y = g.x ? static_cast<uint32_t>((rows + g.x - 1) / g.x) : 0;
  return g;
}

uint32_t u32(const KernelContext &ctx, int64_t v) {
  if (v < 0 || v > UINT32_MAX) ctx.fail("a size over 2^32");
  return static_cast<uint32_t>(v);
}

}  // namespace lumen::vulkan
