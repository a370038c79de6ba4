#include "backends/simulated/simulated_device.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "core/backend.h"

namespace lumen {
namespace {

constexpr Device kSimulatedDevice{DeviceType::Simulated, 0};

// Host memory from the caching host allocator, labelled as the simulated device's, so tensors
// carry the space the planner and the copy stage reason about.
class SimulatedAllocator final : public Allocator {
 public:
  Device device() const override { return kSimulatedDevice; }
  std::shared_ptr<Buffer> allocate(size_t nbytes) override {
    std::shared_ptr<Buffer> host = host_allocator().allocate(nbytes);
    void *data = host->data();
    return std::make_shared<Buffer>(data, host->size(), kSimulatedDevice,
                                    [host](void *) mutable { host.reset(); });
  }
};

class SimulatedStream final : public Stream {
 public:
  Device device() const override { return kSimulatedDevice; }
  void synchronize() override {}  // its kernels run synchronously, like the CPU's
};

// SimulatedDeviceOptions::slowdown of the registered device.
std::atomic<double> g_slowdown{1.0};

// The CPU's kernel for this call (keyed by input 0's dtype, as every kernel is), then a wait for
// the rest of the slowdown.
void slowed_kernel(KernelContext &ctx) {
  const DType dtype = ctx.has_input(0) ? ctx.input(0).dtype() : DType::Float32;
  const KernelFn kernel = kernel_registry("cpu").find(ctx.op, dtype);
  if (!kernel) ctx.fail("no CPU kernel for ", dtype_name(dtype), " inputs");
  const auto start = std::chrono::steady_clock::now();
  kernel(ctx);
  std::this_thread::sleep_for((std::chrono::steady_clock::now() - start) * (g_slowdown - 1));
}

// The CPU's kernels, prepare functions and limits, each kernel called through slowed_kernel.
const KernelRegistry &slowed_kernels() {
  static const KernelRegistry *registry = [] {
    auto *r = new KernelRegistry;
    const KernelRegistry &cpu = kernel_registry("cpu");
    for (const auto &[op, dtype] : cpu.entries()) {
      r->add(op, {dtype}, slowed_kernel);
      if (PrepareFn prepare = cpu.find_prepare(op, dtype)) r->add_prepare(op, {dtype}, prepare);
      if (SupportsFn limits = cpu.find_supports(op, dtype)) r->add_supports(op, {dtype}, limits);
    }
    return r;
  }();
  return *registry;
}

class SimulatedBackend final : public Backend {
 public:
  explicit SimulatedBackend(const SimulatedDeviceOptions &options) : options_(options) {}
  std::string_view name() const override { return "sim"; }
  Device device() const override { return kSimulatedDevice; }
  std::string driver_id() const override {
    std::ostringstream id;
    id << "simulated speed " << options_.speed << " link " << options_.gbytes_per_s << " GB/s "
       << options_.latency_us << " us launch " << options_.launch_us << " us slowdown "
       << options_.slowdown;
    return id.str();
  }
  int priority() const override { return options_.priority; }
  Allocator &allocator() override { return allocator_; }
  std::unique_ptr<Stream> new_stream() override { return std::make_unique<SimulatedStream>(); }
  const KernelRegistry &kernels() const override {
    return options_.slowdown == 1 ? kernel_registry("cpu") : slowed_kernels();
  }
  std::optional<DeviceProfile> declared_profile(const DeviceProfile &host) const override {
    return DeviceProfile{
        .gflops = host.gflops * options_.speed,
        .gbytes_per_s = host.gbytes_per_s * options_.speed,
        .launch_us = options_.launch_us >= 0 ? options_.launch_us : host.launch_us};
  }
  std::optional<LinkProfile> declared_link() const override {
    return LinkProfile{.gbytes_per_s = options_.gbytes_per_s, .latency_us = options_.latency_us};
  }

  // Both sides are host memory underneath; only the labels differ.
  void copy(Tensor &dst, const Tensor &src, Stream *) override {
    if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
      fail("sim copy: ", src.to_string(), " into ", dst.to_string());
    if (!dst.is_contiguous()) fail("sim copy: the destination must be contiguous");
    const Tensor packed = src.is_contiguous() || !src.device().is_host() ? src : src.contiguous();
    if (!packed.is_contiguous()) fail("sim copy: a non-contiguous device tensor");
    if (packed.nbytes() > 0) std::memcpy(dst.raw_data(), packed.raw_data(), packed.nbytes());
  }

 private:
  SimulatedDeviceOptions options_;
  SimulatedAllocator allocator_;
};

const bool registered_from_environment = [] {
  const char *spec = std::getenv("LUMEN_SIMULATED_DEVICE");
  if (!spec || !*spec) return false;
  try {
    register_simulated_device(parse_simulated_device_options(spec));
  } catch (const Error &e) {  // static initialization: a throw would abort the process
    std::fprintf(stderr, "lumen: ignoring the simulated device: %s\n", e.what());
  }
  return true;
}();

}  // namespace

void register_simulated_device(const SimulatedDeviceOptions &options) {
  if (!(options.slowdown >= 1)) fail("the simulated device's slowdown must be at least 1");
  unregister_backend("sim");
  g_slowdown = options.slowdown;
  register_backend(std::make_unique<SimulatedBackend>(options));
}

void unregister_simulated_device() {
  unregister_backend("sim");
}

SimulatedDeviceOptions parse_simulated_device_options(const std::string &spec) {
  SimulatedDeviceOptions options;
  std::istringstream fields(spec);
  for (std::string field; std::getline(fields, field, ',');) {
    const size_t eq = field.find('=');
    const std::string key = field.substr(0, eq);
    char *end = nullptr;
    const double value = eq == std::string::npos ? 0 : std::strtod(field.c_str() + eq + 1, &end);
    if (eq == std::string::npos || end == field.c_str() + eq + 1 || *end != '\0' || !(value >= 0) ||
        (value == 0 && key != "latency" && key != "launch"))
      fail("LUMEN_SIMULATED_DEVICE: expected key=positive number, got '", field, "'");
    if (key == "speed")
      options.speed = value;
    else if (key == "bandwidth")
      options.gbytes_per_s = value;
    else if (key == "latency")
      options.latency_us = value;
    else if (key == "launch")
      options.launch_us = value;
    else if (key == "priority")
      options.priority = static_cast<int>(value);
    else if (key == "slowdown")
      options.slowdown = value;
    else
      fail("LUMEN_SIMULATED_DEVICE: unknown field '", key,
           "' (known: speed, bandwidth, latency, launch, priority, slowdown)");
  }
  return options;
}

}  // namespace lumen
