// The memory budget: the most bytes a model may ask for at once (one tensor, one allocation, the
// arena of a memory plan, its constants while loading), checked before anything is allocated, so
// a model that asks for more than the machine holds gets a lumen::Error naming the size instead
// of an out-of-memory kill.
#pragma once

#include <cstddef>
#include <string>

namespace lumen {

// LUMEN_MAX_MEMORY (bytes, or a number with a K, M, G or T suffix: powers of 1024) when set,
// else the machine's physical memory.
size_t default_memory_budget();

// This thread's budget: the innermost MemoryBudgetScope's, else the default.
size_t memory_budget();

// Sets this thread's budget while it lives (0 keeps the current one): lumen.load_onnx's
// max_memory while a model loads, CompileOptions::max_memory while it compiles and runs.
class MemoryBudgetScope {
 public:
  explicit MemoryBudgetScope(size_t bytes);
  ~MemoryBudgetScope();
  MemoryBudgetScope(const MemoryBudgetScope &) = delete;
  MemoryBudgetScope &operator=(const MemoryBudgetScope &) = delete;

 private:
  size_t previous_;
};

// Throws lumen::Error when `bytes` is over this thread's budget: "<what> needs N bytes, over the
// memory budget of M bytes (...)".
void check_memory_budget(size_t bytes, const std::string &what);

// "1073741824", "512M", "1.5G" -> bytes; lumen::Error for anything else (names `what`).
size_t parse_memory_size(const std::string &text, const std::string &what);

}  // namespace lumen
