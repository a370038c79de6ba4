// Backends: a device plus the kernels that run on it. The router asks each backend what it
// supports; nothing outside src/core/backend_registry.cc names a concrete backend.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_profile.h"
#include "core/kernel.h"
#include "lumen/buffer.h"
#include "lumen/tensor.h"

namespace lumen {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Where its kernels read and write: its memory space. Backends on one device share tensors; a
  // value crossing spaces gets a copy step (compile/insert_copies.h).
  virtual Device device() const = 0;
  // What measurements of this device are keyed by besides the build (core/cache_files.h): the
  // device model and driver, so a new GPU or driver is measured again.
  virtual std::string driver_id() const { return std::string(name()); }
  // Preference when several backends support a node and nothing better is known (higher wins).
  virtual int priority() const = 0;
  // Whether automatic placement may put a node here. The reference backend's plain kernels are a
  // test oracle: only a caller naming it (backend="reference") runs them.
  virtual bool placed_automatically() const { return true; }
  // Whether its device can be used in this process (a GPU backend built in, but no GPU or driver
  // here: false, with the reason). Unavailable backends are never placed; naming one fails.
  virtual bool available(std::string *why_not = nullptr) const {
    (void)why_not;
    return true;
  }
  virtual Allocator &allocator() = 0;
  virtual std::unique_ptr<Stream> new_stream() = 0;
  // Copies src into dst (same dtype and shape); either may live on the host or on this device.
  virtual void copy(Tensor &dst, const Tensor &src, Stream *stream) = 0;
  // The same copy, where the host need not wait for it: a copy into host memory from a device
  // may return an Event (the data is in dst once it has been waited for; dst and src stay
  // allocated until then). nullptr: the copy is done, or ordered on `stream` like copy().
  virtual std::unique_ptr<Event> copy_async(Tensor &dst, const Tensor &src, Stream *stream) {
    copy(dst, src, stream);
    return nullptr;
  }

  // Its kernels (a test device running another backend's kernels returns that registry).
  virtual const KernelRegistry &kernels() const { return kernel_registry(name()); }
  // Declared instead of measured, for a test device that stands in for another
  // (backends/simulated): its profile given the host CPU's measured one, and its link to host
  // memory. nullopt: calibration measures them (compile/cost_model.h).
  virtual std::optional<DeviceProfile> declared_profile(const DeviceProfile &host) const {
    (void)host;
    return std::nullopt;
  }
  virtual std::optional<LinkProfile> declared_link() const { return std::nullopt; }
  // What the backend counts as it runs, for users and tests (Vulkan: command batches recorded
  // and resubmitted); empty where it counts nothing.
  virtual std::map<std::string, uint64_t> counters() const { return {}; }

  KernelFn find_kernel(std::string_view op, DType dtype) const { return kernels().find(op, dtype); }
  PrepareFn find_prepare(std::string_view op, DType dtype) const {
    return kernels().find_prepare(op, dtype);
  }
  bool supports(std::string_view op, DType dtype) const {
    return find_kernel(op, dtype) != nullptr;
  }
  // Whether it runs `node` (kernel dtype `dtype`): it has the kernel and the kernel's own limits
  // (SupportsFn) accept the node; otherwise false, with what is missing in *why_not.
  bool supports(const NodeQuery &node, DType dtype, std::string *why_not = nullptr) const;
};

// Base for backends whose memory is host memory (reference, cpu).
class HostBackend : public Backend {
 public:
  Device device() const override { return kHostDevice; }
  Allocator &allocator() override { return host_allocator(); }
  std::unique_ptr<Stream> new_stream() override;
  void copy(Tensor &dst, const Tensor &src, Stream *stream) override;
};

void register_backend(std::unique_ptr<Backend> backend);
// Takes a backend out of the registry (tests register a simulated device for a while); nullptr
// when none has that name. Nothing compiled for it may still run.
std::unique_ptr<Backend> unregister_backend(std::string_view name);
Backend *find_backend(std::string_view name);  // nullptr when not built/registered
Backend &get_backend(std::string_view name);   // throws naming the available ones
// The first host-memory backend placed automatically (the CPU): it stands for host memory, where
// the caller's tensors and the executor's own steps live. Throws when none is registered.
Backend &host_backend();
// All registered backends, highest priority first.
std::vector<Backend *> backends();

// `t` in the memory of `to`: `t` itself where it is there already, else a copy (through host
// memory between two devices). Waits for the copy.
Tensor transfer(const Tensor &t, Backend &to);

}  // namespace lumen

#define LUMEN_REGISTER_BACKEND(BackendClass)                                        \
  static const bool LUMEN_KERNEL_CONCAT(lumen_backend_registered_, __LINE__) = [] { \
    ::lumen::register_backend(std::make_unique<BackendClass>());                    \
    return true;                                                                    \
  }()
