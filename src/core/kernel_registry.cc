#include <map>
#include <memory>

#include "core/kernel.h"

namespace lumen {

void KernelRegistry::add(std::string op, const std::vector<DType> &dtypes, KernelFn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (DType dtype : dtypes) {
    auto [it, inserted] = kernels_.emplace(std::make_pair(op, dtype), fn);
    if (!inserted)
      fail("kernel for op '", op, "' and dtype ", dtype_name(dtype), " registered twice");
  }
}

KernelFn KernelRegistry::find(std::string_view op, DType dtype) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(std::make_pair(std::string(op), dtype));
  return it == kernels_.end() ? nullptr : it->second;
}

void KernelRegistry::add_prepare(std::string op, const std::vector<DType> &dtypes, PrepareFn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (DType dtype : dtypes) {
    auto [it, inserted] = prepares_.emplace(std::make_pair(op, dtype), fn);
    if (!inserted)
      fail("prepare function for op '", op, "' and dtype ", dtype_name(dtype), " registered twice");
  }
}

PrepareFn KernelRegistry::find_prepare(std::string_view op, DType dtype) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = prepares_.find(std::make_pair(std::string(op), dtype));
  return it == prepares_.end() ? nullptr : it->second;
}

void KernelRegistry::add_supports(std::string op, const std::vector<DType> &dtypes, SupportsFn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (DType dtype : dtypes) {
    auto [it, inserted] = supports_.emplace(std::make_pair(op, dtype), fn);
    if (!inserted)
      fail("supports function for op '", op, "' and dtype ", dtype_name(dtype),
           " registered twice");
  }
}

SupportsFn KernelRegistry::find_supports(std::string_view op, DType dtype) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = supports_.find(std::make_pair(std::string(op), dtype));
  return it == supports_.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, DType>> KernelRegistry::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, DType>> out;
  for (const auto &entry : kernels_) out.push_back(entry.first);
  return out;
}

KernelRegistry &kernel_registry(std::string_view backend) {
  static auto *registries = new std::map<std::string, std::unique_ptr<KernelRegistry>, std::less<>>;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = registries->find(backend);
  if (it == registries->end())
    it = registries->emplace(std::string(backend), std::make_unique<KernelRegistry>()).first;
  return *it->second;
}

}  // namespace lumen
