// The Vulkan compute backend: Vulkan 1.2 through the system's loader, on any GPU with a Vulkan
// driver (NVIDIA, AMD, Intel; Apple GPUs through MoltenVK) and in CI on Mesa's lavapipe. Its
// memory is its own space (vulkan:0): the router weighs it against the CPU with copies counted,
// and the compiler inserts copies where values cross. Kernels are GLSL compute shaders
// (shaders/*.comp) compiled to SPIR-V at build time; see vulkan_stream.h for how they run.
#include <cstring>
#include <optional>

#include "backends/vulkan/vulkan_device.h"
#include "backends/vulkan/vulkan_memory.h"
#include "backends/vulkan/vulkan_stream.h"
#include "core/backend.h"

namespace lumen::vulkan {
namespace {

// The stream to order a copy after: the caller's, else one of its own (nothing pending on it).
class CopyStream {
 public:
  explicit CopyStream(Stream *given) : stream_(dynamic_cast<VulkanStream *>(given)) {
    if (!stream_) stream_ = &own_.emplace();
  }
  VulkanStream &operator*() const { return *stream_; }

 private:
  std::optional<VulkanStream> own_;
  VulkanStream *stream_;
};

class VulkanBackend final : public Backend {
 public:
  std::string_view name() const override { return "vulkan"; }
  Device device() const override { return kVulkanDevice; }
  int priority() const override { return 80; }
  bool available(std::string *why_not) const override {
    if (vulkan_device()) return true;
    if (why_not) *why_not = vulkan_unavailable_reason();
    return false;
  }
  std::string driver_id() const override {
    VulkanDevice *dev = vulkan_device();
    return dev ? dev->description() : "no device";
  }
  std::map<std::string, uint64_t> counters() const override {
    const StreamCounters c = stream_counters();
    return {{"batches_recorded", c.recorded}, {"batches_replayed", c.replayed}};
  }
  Allocator &allocator() override { return device_allocator(); }
  std::unique_ptr<Stream> new_stream() override { return std::make_unique<VulkanStream>(); }

  // Ordered on the stream, without waiting where the host need not: a copy to the device is
  // recorded after the work before it (through a staging block the stream keeps until it has
  // run), so the host goes on; only a copy to the host waits, for the work that makes its source.
  void copy(Tensor &dst, const Tensor &src, Stream *stream) override {
    if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
      fail("vulkan copy: ", src.to_string(), " into ", dst.to_string());
    const size_t bytes = src.nbytes();
    if (bytes == 0) return;
    const bool to_device = !dst.device().is_host(), from_device = !src.device().is_host();
    if (!dst.is_contiguous() || (from_device && !src.is_contiguous()))
      fail("vulkan copy: device tensors must be contiguous");
    if (!to_device && !from_device) return dst.copy_from(src);
    CopyStream s(stream);
    if (to_device && from_device) {
      const Resolved a = resolve(src.raw_data()), b = resolve(dst.raw_data());
      return (*s).copy_buffer(a.buffer, a.offset, b.buffer, b.offset, bytes);
    }
    const Resolved d = resolve((to_device ? dst : src).raw_data());
    if (to_device) {
      const Tensor host = src.contiguous();
      // Memory the host sees (lavapipe, integrated GPUs) with nothing pending that could still
      // read the destination: a plain memcpy.
      if (d.mapped && (*s).idle()) {
        std::memcpy(static_cast<std::byte *>(d.mapped) + d.offset, host.raw_data(), bytes);
        return;
      }
      std::shared_ptr<Buffer> staging = allocate_staging(bytes);
      const Resolved st = resolve_staging(staging->data());
      std::memcpy(static_cast<std::byte *>(st.mapped) + st.offset, host.raw_data(), bytes);
      (*s).copy_buffer(st.buffer, st.offset, d.buffer, d.offset, bytes);
      (*s).retain(std::move(staging));
      return;
    }
    if (d.mapped) {
      (*s).synchronize();  // the work that makes the source has run
      std::memcpy(dst.raw_data(), static_cast<const std::byte *>(d.mapped) + d.offset, bytes);
      return;
    }
    copy_async(dst, src, &*s)->wait();  // through a staging block, as below
  }

  // A copy to the host on the executor's stream: recorded into a staging block and submitted with
  // the work before it; the host reads the block when it waits. Always through staging, even where
  // the host could map the source: later work may overwrite the source before the wait.
  std::unique_ptr<Event> copy_async(Tensor &dst, const Tensor &src, Stream *stream) override {
    auto *s = dynamic_cast<VulkanStream *>(stream);
    if (!s || src.device().is_host() || !dst.device().is_host() || src.nbytes() == 0 ||
        !dst.is_contiguous() || !src.is_contiguous() || dst.dtype() != src.dtype() ||
        dst.shape() != src.shape()) {
      copy(dst, src, stream);  // checks what it refuses
      return nullptr;
    }
    std::shared_ptr<Buffer> staging = allocate_staging(src.nbytes());
    const Resolved from = resolve(src.raw_data()), to = resolve_staging(staging->data());
    s->copy_buffer(from.buffer, from.offset, to.buffer, to.offset, src.nbytes());
    s->retain(staging);
    return std::make_unique<Download>(*s, s->flush_submission(), std::move(staging), to, dst);
  }

 private:
  class Download final : public Event {
   public:
    Download(VulkanStream &stream, uint64_t submission, std::shared_ptr<Buffer> staging,
             Resolved at, Tensor dst)
        : stream_(stream),
          submission_(submission),
          staging_(std::move(staging)),
          at_(at),
          dst_(std::move(dst)) {}
    void wait() override {
      if (!staging_) return;
      stream_.wait(submission_);
      std::memcpy(dst_.raw_data(), static_cast<const std::byte *>(at_.mapped) + at_.offset,
                  dst_.nbytes());
      staging_.reset();
    }

   private:
    VulkanStream &stream_;
    uint64_t submission_;
    std::shared_ptr<Buffer> staging_;
    Resolved at_;
    Tensor dst_;
  };
};

LUMEN_REGISTER_BACKEND(VulkanBackend);

}  // namespace
}  // namespace lumen::vulkan
