#include <algorithm>
#include <mutex>

#include "core/backend.h"
#include "core/backend_plugins.h"

namespace lumen {
namespace {

class HostStream final : public Stream {
 public:
  Device device() const override { return kHostDevice; }
  void synchronize() override {}  // host kernels run synchronously
};

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<Backend>> backends;
};

Registry &registry() {
  static auto *r = new Registry;
  return *r;
}

}  // namespace

bool Backend::supports(const NodeQuery &node, DType dtype, std::string *why_not) const {
  if (!find_kernel(node.op, dtype)) {
    if (why_not) *why_not = str("no ", dtype_name(dtype), " kernel");
    return false;
  }
  const SupportsFn limits = kernels().find_supports(node.op, dtype);
  std::string missing = limits ? limits(node) : std::string();
  if (missing.empty()) return true;
  if (why_not) *why_not = std::move(missing);
  return false;
}

std::unique_ptr<Stream> HostBackend::new_stream() {
  return std::make_unique<HostStream>();
}

void HostBackend::copy(Tensor &dst, const Tensor &src, Stream *) {
  dst.copy_from(src);
}

void register_backend(std::unique_ptr<Backend> backend) {
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto &b : r.backends)
    if (b->name() == backend->name()) fail("backend '", backend->name(), "' registered twice");
  r.backends.push_back(std::move(backend));
  std::stable_sort(r.backends.begin(), r.backends.end(),
                   [](const auto &a, const auto &b) { return a->priority() > b->priority(); });
}

std::unique_ptr<Backend> unregister_backend(std::string_view name) {
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto it = r.backends.begin(); it != r.backends.end(); ++it)
    if ((*it)->name() == name) {
      std::unique_ptr<Backend> out = std::move(*it);
      r.backends.erase(it);
      return out;
    }
  return nullptr;
}

Backend *find_backend(std::string_view name) {
  load_backend_plugins();
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto &b : r.backends)
    if (b->name() == name) return b.get();
  return nullptr;
}

Backend &get_backend(std::string_view name) {
  if (Backend *b = find_backend(name)) return *b;
  std::string known;
  for (Backend *b : backends()) known += (known.empty() ? "" : ", ") + std::string(b->name());
  const std::string plugin = backend_plugin_error(name);
  fail("unknown backend '", name, "' (available: ", known, ")",
       plugin.empty() ? "" : "; its plugin did not load: ", plugin);
}

Backend &host_backend() {
  for (Backend *b : backends())
    if (b->device().is_host() && b->placed_automatically()) return *b;
  fail("no host backend is registered");
}

std::vector<Backend *> backends() {
  load_backend_plugins();
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<Backend *> out;
  for (const auto &b : r.backends) out.push_back(b.get());
  return out;
}

}  // namespace lumen
