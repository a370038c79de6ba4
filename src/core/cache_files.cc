#include "core/cache_files.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace lumen {

std::string cache_file_path(std::string_view file) {
  if (const char *dir = std::getenv("LUMEN_CACHE_DIR"); dir && *dir)
    return std::string(dir) + "/" + std::string(file);
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/lumen/" + std::string(file);
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/lumen/" + std::string(file);
  return "";
}

std::string build_id() {
  std::ostringstream id;
  id << "lumen " << LUMEN_VERSION_STRING;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&build_id), &info) && info.dli_fname) {
    std::error_code size_error, time_error;
    const auto size = std::filesystem::file_size(info.dli_fname, size_error);
    const auto time = std::filesystem::last_write_time(info.dli_fname, time_error);
    if (!size_error && !time_error)
      id << " build " << size << "-" << time.time_since_epoch().count();
  }
  return id.str();
}

}  // namespace lumen
