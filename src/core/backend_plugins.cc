#include "core/backend_plugins.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

namespace lumen {
namespace {

#ifndef LUMEN_BACKEND_PLUGINS
#define LUMEN_BACKEND_PLUGINS ""
#endif

std::map<std::string, std::string, std::less<>> &errors() {
  static auto *e = new std::map<std::string, std::string, std::less<>>;
  return *e;
}

// The folder liblumen was loaded from: the plugins were built or installed beside it.
std::filesystem::path own_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&load_backend_plugins), &info) || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

}  // namespace

void load_backend_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::istringstream names(LUMEN_BACKEND_PLUGINS);
    const char *dir = std::getenv("LUMEN_PLUGIN_DIR");
    const std::filesystem::path folder = dir && *dir ? std::filesystem::path(dir) : own_folder();
    for (std::string name; names >> name;) {
      const std::filesystem::path file = folder / ("liblumen_" + name + ".so");
      // Kept loaded for the process: its kernels are registered in liblumen's tables.
      if (!dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        const char *why = dlerror();
        errors()[name] = why ? why : ("cannot load " + file.string());
      }
    }
  });
}

std::map<std::string, std::string, std::less<>> failed_backend_plugins() {
  load_backend_plugins();
  return errors();
}

std::string backend_plugin_error(std::string_view backend) {
  load_backend_plugins();
  const auto it = errors().find(backend);
  return it == errors().end() ? "" : it->second;
}

}  // namespace lumen
