// Backends: a device plus the kernels that run on it. The router asks each backend what it
// supports; nothing outside src/core/backend_registry.cc names a concrete backend.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel.h"
#include "lumen/buffer.h"
#include "lumen/tensor.h"

namespace lumen {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual Device device() const = 0;
  // Preference when several backends support a node and nothing better is known (higher wins).
  virtual int priority() const = 0;
  // Whether automatic placement may put a node here. The reference backend's plain kernels are a
  // test oracle: only a caller naming it (backend="reference") runs them.
  virtual bool placed_automatically() const { return true; }
  virtual Allocator &allocator() = 0;
  virtual std::unique_ptr<Stream> new_stream() = 0;
  // Copies src into dst (same dtype and shape); either may live on the host or on this device.
  virtual void copy(Tensor &dst, const Tensor &src, Stream *stream) = 0;

  const KernelRegistry &kernels() const { return kernel_registry(name()); }
  KernelFn find_kernel(std::string_view op, DType dtype) const { return kernels().find(op, dtype); }
  PrepareFn find_prepare(std::string_view op, DType dtype) const {
    return kernels().find_prepare(op, dtype);
  }
  bool supports(std::string_view op, DType dtype) const {
    return find_kernel(op, dtype) != nullptr;
  }
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
Backend *find_backend(std::string_view name);  // nullptr when not built/registered
Backend &get_backend(std::string_view name);   // throws naming the available ones
// All registered backends, highest priority first.
std::vector<Backend *> backends();

}  // namespace lumen

#define LUMEN_REGISTER_BACKEND(BackendClass)                                        \
  static const bool LUMEN_KERNEL_CONCAT(lumen_backend_registered_, __LINE__) = [] { \
    ::lumen::register_backend(std::make_unique<BackendClass>());                    \
    return true;                                                                    \
  }()
