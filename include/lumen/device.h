// Where memory lives and kernels run. Backends own devices; nothing central switches on a device's
// type except the backend registry.
#pragma once

#include <memory>
#include <string>

namespace lumen {

class Buffer;

// Simulated: a test device whose memory is host memory kept apart as its own space (placement and
// copy insertion are tested with it; see src/backends/simulated/).
enum class DeviceType { CPU, CUDA, Metal, Vulkan, Simulated };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  bool is_host() const { return type == DeviceType::CPU; }
  bool operator==(const Device &) const = default;
  std::string to_string() const;
};

inline constexpr Device kHostDevice{};

// An ordered queue of work on a device. Host backends run synchronously, so their stream is a
// no-op; accelerator backends map it to their native stream.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  // Blocks until all work queued so far has finished.
  virtual void synchronize() = 0;
  // Starts the work queued so far without waiting for it, for devices that hold work back until
  // a synchronization (the executor flushes where a run moves to another device, so both work).
  virtual void flush() {}
  // Keeps `buffer` allocated until the work queued so far has run, where a caller drops its last
  // reference earlier (host streams run synchronously: nothing to keep).
  virtual void retain(std::shared_ptr<Buffer> buffer) { (void)buffer; }
};

// Work under way on a device that the host will need: wait() returns once it has finished (for a
// copy into host memory, once the data is there). Waiting twice is harmless.
class Event {
 public:
  virtual ~Event() = default;
  virtual void wait() = 0;
};

}  // namespace lumen
