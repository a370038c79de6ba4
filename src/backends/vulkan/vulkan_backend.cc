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
  Allocator &allocator() override { return device_allocator(); }
  std::unique_ptr<Stream> new_stream() override { return std::make_unique<VulkanStream>(); }

  void copy(Tensor &dst, const Tensor &src, Stream *stream) override {
    if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
      fail("vulkan copy: ", src.to_string(), " into ", dst.to_string());
    const size_t bytes = src.nbytes();
    if (bytes == 0) return;
    const bool to_device = !dst.device().is_host(), from_device = !src.device().is_host();
    if (!dst.is_contiguous() || (from_device && !src.is_contiguous()))
      fail("vulkan copy: device tensors must be contiguous");
    CopyStream s(stream);
    // Work recorded before may still read or write these bytes: it runs first.
    (*s).synchronize();
    if (to_device && from_device) {
      const Resolved a = resolve(src.raw_data()), b = resolve(dst.raw_data());
      (*s).copy_buffer(a.buffer, a.offset, b.buffer, b.offset, bytes);
      (*s).synchronize();
      return;
    }
    if (!to_device && !from_device) return dst.copy_from(src);
    const Tensor host = to_device ? src.contiguous() : dst;
    const Tensor &device_side = to_device ? dst : src;
    const Resolved d = resolve(device_side.raw_data());
    if (d.mapped) {  // memory the host sees (lavapipe, integrated GPUs): a plain memcpy
      std::byte *mapped = static_cast<std::byte *>(d.mapped) + d.offset;
      if (to_device)
        std::memcpy(mapped, host.raw_data(), bytes);
      else
        std::memcpy(host.raw_data(), mapped, bytes);
      return;
    }
    const std::shared_ptr<Buffer> staging = allocate_staging(bytes);
    const Resolved st = resolve_staging(staging->data());
    std::byte *mapped = static_cast<std::byte *>(st.mapped) + st.offset;
    if (to_device) {
      std::memcpy(mapped, host.raw_data(), bytes);
      (*s).copy_buffer(st.buffer, st.offset, d.buffer, d.offset, bytes);
      (*s).synchronize();
    } else {
      (*s).copy_buffer(d.buffer, d.offset, st.buffer, st.offset, bytes);
      (*s).synchronize();
      std::memcpy(host.raw_data(), mapped, bytes);
    }
  }
};

LUMEN_REGISTER_BACKEND(VulkanBackend);

}  // namespace
}  // namespace lumen::vulkan
