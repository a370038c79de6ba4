#include "backends/vulkan/vulkan_stream.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "backends/vulkan/vulkan_device.h"
#include "backends/vulkan/vulkan_memory.h"

namespace lumen::vulkan {
namespace {

constexpr uint32_t kSetsPerPool = 512;
constexpr size_t kRecordings = 8;  // batches a stream keeps for resubmission

std::atomic<uint64_t> g_recorded{0}, g_replayed{0};

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

StreamCounters stream_counters() {
  return {g_recorded, g_replayed};
}

VulkanStream::VulkanStream() {
  VulkanDevice &dev = device_or_fail();
  VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = dev.queue_family()};
  LUMEN_VK(vkCreateCommandPool(dev.device(), &pool_info, nullptr, &pool_));
}

VulkanStream::~VulkanStream() {
  VkDevice dev = vulkan_device()->device();
  try {
    synchronize();
  } catch (const Error &) {  // a destructor must not throw; the error was seen by whoever waited
  }
  for (const auto &r : recordings_) {
    vkDestroyDescriptorPool(dev, r->descriptors, nullptr);
    vkDestroyFence(dev, r->done, nullptr);
  }
  vkDestroyCommandPool(dev, pool_, nullptr);  // and the command buffers with it
}

Device VulkanStream::device() const {
  return kVulkanDevice;
}

uint64_t VulkanStream::flush_submission() {
  if (pending_.empty()) {
    retained_.clear();  // nothing recorded reads them
    return submitted_;
  }
  // A batch that repeats a recording whose buffers all live runs it again; any other is recorded
  // (a prefix of a recording is recorded too: the recording holds more than this batch).
  if (replay_ &&
      (pending_.size() != replay_->list.size() || replay_->generation != buffers_destroyed())) {
    replay_ = nullptr;
    start_recording();
  }
  Recording &r = replay_ ? *replay_ : *recording_;
  if (replay_) {
    retire(r);  // its last submission must have run before it is submitted again
  } else {
    LUMEN_VK(vkEndCommandBuffer(r.commands));
    r.list = pending_;
  }
  ++(replay_ ? g_replayed : g_recorded);
  replay_ = recording_ = nullptr;
  pending_.clear();
  r.used = ++clock_;
  vulkan_device()->submit(r.commands, r.done);
  r.in_flight = true;
  r.submission = ++submitted_;
  r.retained = std::move(retained_);
  retained_.clear();
  return r.submission;
}

void VulkanStream::wait(uint64_t submission) {
  for (const auto &r : recordings_)
    if (r->in_flight && r->submission <= submission) retire(*r);
}

void VulkanStream::synchronize() {
  wait(flush_submission());
}

bool VulkanStream::idle() {
  if (!pending_.empty()) return false;
  for (const auto &r : recordings_) {
    if (!r->in_flight) continue;
    const VkResult status = vkGetFenceStatus(vulkan_device()->device(), r->done);
    if (status == VK_NOT_READY) return false;
    LUMEN_VK(status);
    retire(*r);
  }
  return true;
}

void VulkanStream::retire(Recording &r) {
  if (!r.in_flight) return;
  VkDevice dev = vulkan_device()->device();
  LUMEN_VK(vkWaitForFences(dev, 1, &r.done, VK_TRUE, UINT64_MAX));
  LUMEN_VK(vkResetFences(dev, 1, &r.done));
  r.in_flight = false;
  r.retained.clear();
}

VulkanStream::Recording *VulkanStream::find_recording(const Command &first) {
  Recording *best = nullptr;
  for (const auto &r : recordings_)
    if (!r->list.empty() && r->list[0] == first && r->generation == buffers_destroyed() &&
        (!best || r->used > best->used))
      best = r.get();
  return best;
}

void VulkanStream::start_recording() {
  VkDevice dev = vulkan_device()->device();
  Recording *r = nullptr;
  if (recordings_.size() < kRecordings) {
    auto fresh = std::make_unique<Recording>();
    VkCommandBufferAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = pool_,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    LUMEN_VK(vkAllocateCommandBuffers(dev, &alloc, &fresh->commands));
    VkDescriptorPoolSize size{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .descriptorCount = kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo dp{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                  .maxSets = kSetsPerPool,
                                  .poolSizeCount = 1,
                                  .pPoolSizes = &size};
    LUMEN_VK(vkCreateDescriptorPool(dev, &dp, nullptr, &fresh->descriptors));
    VkFenceCreateInfo fence{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    LUMEN_VK(vkCreateFence(dev, &fence, nullptr, &fresh->done));
    recordings_.push_back(std::move(fresh));
    r = recordings_.back().get();
  } else {
    for (const auto &candidate : recordings_)
      if (!r || candidate->used < r->used) r = candidate.get();
    retire(*r);  // not reset while the device may still run it
    LUMEN_VK(vkResetCommandBuffer(r->commands, 0));
    LUMEN_VK(vkResetDescriptorPool(dev, r->descriptors, 0));
  }
  r->sets = 0;
  r->list.clear();
  r->generation = buffers_destroyed();
  VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  LUMEN_VK(vkBeginCommandBuffer(r->commands, &begin));
  recording_ = r;
  for (const Command &c : pending_) record(*r, c);
}

void VulkanStream::add(const Command &command) {
  const size_t k = pending_.size();
  if (k == 0) replay_ = find_recording(command);
  if (replay_ && (k >= replay_->list.size() || !(replay_->list[k] == command))) {
    replay_ = nullptr;
    start_recording();
  }
  if (!replay_ && !recording_) start_recording();
  if (recording_ && command.pipeline && recording_->sets == kSetsPerPool) {
    flush_submission();  // its descriptor pool is spent: this batch ends here
    return add(command);
  }
  if (recording_) record(*recording_, command);
  pending_.push_back(command);
}

void VulkanStream::record(Recording &r, const Command &c) {
  if (!c.pipeline) {
    VkBufferCopy region{.srcOffset = c.src_offset, .dstOffset = c.dst_offset, .size = c.bytes};
    vkCmdCopyBuffer(r.commands, c.src, c.dst, 1, &region);
    VkMemoryBarrier barrier{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                            .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                            .dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
                                             VK_ACCESS_SHADER_WRITE_BIT |
                                             VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(r.commands, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &barrier, 0, nullptr, 0, nullptr);
    return;
  }
  VkDevice dev = vulkan_device()->device();
  VkDescriptorSetAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                    .descriptorPool = r.descriptors,
                                    .descriptorSetCount = 1,
                                    .pSetLayouts = &c.set_layout};
  VkDescriptorSet set;
  LUMEN_VK(vkAllocateDescriptorSets(dev, &alloc, &set));
  ++r.sets;
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet writes[kMaxBindings];
  for (uint32_t i = 0; i < c.bindings; ++i) {
    infos[i] = {.buffer = c.buffers[i], .offset = 0, .range = VK_WHOLE_SIZE};
    writes[i] = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                 .dstSet = set,
                 .dstBinding = i,
                 .descriptorCount = 1,
                 .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                 .pBufferInfo = &infos[i]};
  }
  vkUpdateDescriptorSets(dev, c.bindings, writes, 0, nullptr);
  vkCmdBindPipeline(r.commands, VK_PIPELINE_BIND_POINT_COMPUTE, c.pipeline);
  vkCmdBindDescriptorSets(r.commands, VK_PIPELINE_BIND_POINT_COMPUTE, c.layout, 0, 1, &set, 0,
                          nullptr);
  vkCmdPushConstants(r.commands, c.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushBytes,
                     c.push.data());
  vkCmdDispatch(r.commands, c.groups[0], c.groups[1], c.groups[2]);
  // The next dispatch may read what this one wrote (or overwrite what it read).
  VkMemoryBarrier barrier{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT};
  vkCmdPipelineBarrier(r.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
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
  Command c{.pipeline = p.pipeline,
            .layout = p.layout,
            .set_layout = p.set_layout,
            .bindings = static_cast<uint32_t>(tensors.size()),
            .groups = {groups_x, groups_y, groups_z}};
  for (size_t i = 0; i < tensors.size(); ++i) c.buffers[i] = resolve(tensors[i]->raw_data()).buffer;
  std::memcpy(c.push.data(), push, std::min(push_bytes, kMaxPushBytes));
  add(c);
}

void VulkanStream::copy_buffer(VkBuffer src, size_t src_offset, VkBuffer dst, size_t dst_offset,
                               size_t bytes) {
  if (bytes == 0) return;
  add(Command{
      .src = src, .dst = dst, .src_offset = src_offset, .dst_offset = dst_offset, .bytes = bytes});
}

const Shader &reduction_shader(const Shader &plain, const Shader &subgroup) {
  const char *env = std::getenv("LUMEN_VULKAN_SUBGROUPS");  // tests run both variants
  const bool allowed = !env || std::string_view(env) != "0";
  return allowed && device_or_fail().subgroup_reductions() ? subgroup : plain;
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
