#include <map>
#include <mutex>
#include <string>

#include "runtime/executable_impl.h"

namespace lumen {
namespace {

struct BuiltinTable {
  std::mutex mutex;
  std::map<std::string, BuiltinStepFn, std::less<>> steps;
};

BuiltinTable &table() {
  static auto *t = new BuiltinTable;
  return *t;
}

}  // namespace

void register_builtin_step(std::string_view op, BuiltinStepFn fn) {
  BuiltinTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (!t.steps.emplace(std::string(op), fn).second)
    fail("builtin step '", op, "' registered twice");
}

BuiltinStepFn find_builtin_step(std::string_view op) {
  BuiltinTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.steps.find(op);
  return it == t.steps.end() ? nullptr : it->second;
}

}  // namespace lumen
