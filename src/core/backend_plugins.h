// Backends built as plugins: shared libraries (liblumen_<backend>.so, next to liblumen, or in
// $LUMEN_PLUGIN_DIR) loaded the first time the backend registry is asked, so liblumen itself loads
// on machines without a plugin's own dependencies (the CUDA backend needs the CUDA driver and
// cuBLAS). CMake names the plugins it built (LUMEN_BACKEND_PLUGINS); a plugin registers its backend
// and kernels from its static initializers, like the backends built into liblumen.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace lumen {

// Loads every plugin once (thread-safe; later calls return at once).
void load_backend_plugins();
// Why the plugin of `backend` did not load ("" when it loaded or was not built).
std::string backend_plugin_error(std::string_view backend);
// Every plugin that did not load, by backend name, with why.
std::map<std::string, std::string, std::less<>> failed_backend_plugins();

}  // namespace lumen
