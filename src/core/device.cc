#include "lumen/device.h"

namespace lumen {

std::string Device::to_string() const {
  switch (type) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::CUDA:
      return "cuda:" + std::to_string(index);
    case DeviceType::Metal:
      return "metal:" + std::to_string(index);
    case DeviceType::Vulkan:
      return "vulkan:" + std::to_string(index);
    case DeviceType::Simulated:
      return "sim:" + std::to_string(index);
  }
  return "unknown";
}

}  // namespace lumen
