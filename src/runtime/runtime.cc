#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/backend.h"
#include "core/thread_pool.h"
#include "lumen/lumen.h"

namespace lumen {

struct Runtime::Impl {
  explicit Impl(int threads) : pool(threads) {}
  ThreadPool pool;
  std::mutex mutex;
  std::vector<std::unique_ptr<Executable>> executables;
};

Runtime::Runtime(RuntimeOptions options) : options_(std::move(options)) {
  if (options_.num_threads < 0)
    fail("Runtime: num_threads must be >= 0, got ", options_.num_threads);
  // Unset, the environment may name one (LUMEN_BACKEND=vulkan runs a program on Vulkan as is).
  if (const char *env = std::getenv("LUMEN_BACKEND"); options_.backend.empty() && env)
    options_.backend = env;
  if (options_.backend == "auto") options_.backend.clear();  // the router weighs every device
  // One backend pins every node; a comma-separated list limits placement to those. Unknown or
  // unavailable names fail here.
  const std::string_view names = options_.backend;
  for (size_t start = 0; !names.empty() && start <= names.size();) {
    const size_t comma = std::min(names.find(',', start), names.size());
    const std::string_view name = names.substr(start, comma - start);
    if (std::string why_not; !get_backend(name).available(&why_not))
      fail("backend '", name, "' is not available here: ", why_not);
    start = comma + 1;
  }
  impl_ = std::make_unique<Impl>(options_.num_threads ? options_.num_threads
                                                      : ThreadPool::default_threads());
}

Runtime::~Runtime() = default;

Tensor Runtime::alloc(const Shape &shape, DType dtype) const {
  return Tensor::zeros(shape, dtype);
}

int Runtime::num_threads() const {
  return impl_->pool.size();
}
ThreadPool &Runtime::thread_pool() const {
  return impl_->pool;
}

Executable *Runtime::adopt(std::unique_ptr<Executable> executable) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->executables.push_back(std::move(executable));
  return impl_->executables.back().get();
}

void Runtime::release(const Executable *executable) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto &list = impl_->executables;
  auto it =
      std::find_if(list.begin(), list.end(), [&](const auto &e) { return e.get() == executable; });
  if (it == list.end()) fail("Runtime::release: executable is not owned by this runtime");
  list.erase(it);
}

}  // namespace lumen
