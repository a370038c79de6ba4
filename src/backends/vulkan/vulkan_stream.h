// Recording and running compute work. A pipeline per shader (SPIR-V compiled from
// shaders/<name>.comp by glslc at build time and embedded in the library), created on first use
// and kept. A stream collects dispatches and copies, each followed by a barrier, and submits them
// at flush() without waiting (the executor flushes where a run leaves the device, so the device
// works while the host runs the next steps); the host waits only where it needs a result: wait()
// for one submission (a copy back), synchronize() for all.
//
// Command buffers are recorded once and resubmitted: a stream keeps its last few recorded
// batches, and a batch whose commands equal one of them, to the byte (same pipelines, buffers,
// push constants, workgroups: what a planned plan's run repeats, its arena reused by the run
// state that owns the stream), is submitted again instead of recorded. Any difference records
// afresh, so nothing stale runs; a recording is dropped when a buffer it may use was destroyed.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/kernel.h"
#include "lumen/device.h"
#include "lumen/tensor.h"

namespace lumen::vulkan {

// SPIR-V of shaders/<name>.comp (the generated vulkan_shaders.h declares one per file). Its
// storage buffers are bindings 0, 1, ... in the order dispatch() gets the tensors.
struct Shader {
  const char *name;
  const uint32_t *words;
  size_t bytes;
};

// Push constants: at most 128 bytes (every Vulkan device has that many).
inline constexpr size_t kMaxPushBytes = 128;
inline constexpr size_t kMaxBindings = 8;

// Batches recorded and replayed by every stream of the process (VulkanBackend::counters).
struct StreamCounters {
  uint64_t recorded = 0, replayed = 0;
};
StreamCounters stream_counters();

class VulkanStream final : public Stream {
 public:
  VulkanStream();
  ~VulkanStream() override;
  Device device() const override;
  void synchronize() override;
  void flush() override { flush_submission(); }
  // Submits what is recorded without waiting; returns its number (the last one's when nothing
  // was recorded), which wait() takes.
  uint64_t flush_submission();
  // Blocks until submission `number` and those before it have run.
  void wait(uint64_t number);

  // Records one dispatch of `shader` over `tensors` (bound whole: kernels pass element offsets
  // in their push constants, see element_offset) with `push` bytes of push constants.
  void dispatch(const Shader &shader, const std::vector<const Tensor *> &tensors, const void *push,
                size_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // Records a copy between two Vulkan buffers (device or staging addresses).
  void copy_buffer(VkBuffer src, size_t src_offset, VkBuffer dst, size_t dst_offset, size_t bytes);
  // Keeps `t` (a kernel's temporary: tables, intermediates) allocated until the work recorded so
  // far has run, so its memory is not handed out again while a dispatch still reads it.
  void retain(const Tensor &t) { retained_.push_back(t.buffer()); }
  void retain(std::shared_ptr<Buffer> b) override { retained_.push_back(std::move(b)); }
  // Whether nothing is recorded or submitted and not yet run.
  bool idle();

 private:
  // One command as recorded: a dispatch (pipeline set) or a copy. Equal commands record equal
  // Vulkan commands.
  struct Command {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    uint32_t bindings = 0;
    std::array<VkBuffer, kMaxBindings> buffers{};
    std::array<unsigned char, kMaxPushBytes> push{};
    std::array<uint32_t, 3> groups{};
    VkBuffer src = VK_NULL_HANDLE, dst = VK_NULL_HANDLE;
    VkDeviceSize src_offset = 0, dst_offset = 0, bytes = 0;
    bool operator==(const Command &) const = default;
  };
  // A recorded batch: its command buffer, the descriptor sets it binds, and its commands.
  struct Recording {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkDescriptorPool descriptors = VK_NULL_HANDLE;
    uint32_t sets = 0;
    std::vector<Command> list;
    uint64_t used = 0;        // when last submitted (the least recent is recorded over)
    uint64_t generation = 0;  // buffers_destroyed() when recorded
    // Its last submission: number, whether it may still run (`done` not yet waited for), and the
    // buffers it must keep alive until then.
    VkFence done = VK_NULL_HANDLE;
    bool in_flight = false;
    uint64_t submission = 0;
    std::vector<std::shared_ptr<Buffer>> retained;
  };

  void add(const Command &command);
  Recording *find_recording(const Command &first);
  void start_recording();  // into a free or the least recent recording, pending_ first
  void record(Recording &r, const Command &command);
  void retire(Recording &r);  // waits for its last submission, if still in flight

  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<Recording>> recordings_;
  std::vector<Command> pending_;    // the batch so far
  Recording *replay_ = nullptr;     // a recording that starts with pending_
  Recording *recording_ = nullptr;  // the recording pending_ is being recorded into
  uint64_t clock_ = 0, submitted_ = 0;
  std::vector<std::shared_ptr<Buffer>> retained_;  // for the batch being recorded
};

// A reduction shader for this device: its _subgroup variant where the device reduces with
// subgroup operations (VulkanDevice::subgroup_reductions) and LUMEN_VULKAN_SUBGROUPS is not 0,
// else the shared-memory one.
const Shader &reduction_shader(const Shader &plain, const Shader &subgroup);

// Where a tensor starts in its buffer, in elements of its dtype (what shaders index by).
uint32_t element_offset(const Tensor &t);

// Groups of 256 invocations covering n items: x up to 65535, the rest in y (shaders compute
// their index as gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x).
struct Groups {
  uint32_t x = 1, y = 1;
};
Groups groups_for(uint64_t n);

// One workgroup per row: rows in x, spilling into y past 65535 (shaders compute their row as
// gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x).
Groups row_groups(uint64_t rows);

// `v` as a push-constant size; fails (naming the kernel) beyond 32 bits.
uint32_t u32(const KernelContext &ctx, int64_t v);

// Runs one dispatch for a kernel: on the step's stream where the executor gave one (submitted
// with the others at the next synchronization), else on a stream of its own, waited for.
template <class Push>
void dispatch(KernelContext &ctx, const Shader &shader, const std::vector<const Tensor *> &tensors,
              const Push &push, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
  static_assert(sizeof(Push) <= kMaxPushBytes, "push constants over 128 bytes");
  if (auto *stream = dynamic_cast<VulkanStream *>(ctx.stream)) {
    stream->dispatch(shader, tensors, &push, sizeof(Push), gx, gy, gz);
    return;
  }
  VulkanStream own;
  own.dispatch(shader, tensors, &push, sizeof(Push), gx, gy, gz);
  own.synchronize();
}

}  // namespace lumen::vulkan
