#include "lumen/memory_budget.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "lumen/error.h"

namespace lumen {
namespace {

thread_local size_t scoped_budget = 0;  // 0: none

size_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<size_t>::max();
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

}  // namespace

size_t parse_memory_size(const std::string &text, const std::string &what) {
  char *end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  double scale = 1;
  std::string suffix(end ? end : "");
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() == 1) {
    const std::string units = "KMGT";
    const size_t unit = units.find(static_cast<char>(std::toupper(suffix[0])));
    if (unit != std::string::npos) {
      scale = std::pow(1024.0, double(unit + 1));
      suffix.clear();
    }
  }
  const double bytes = number * scale;
  if (end == text.c_str() || !suffix.empty() || !std::isfinite(bytes) || bytes < 1 ||
      bytes >= 1.8e19)
    fail(what, ": '", text, "' is not a memory size (bytes, or a number with K, M, G or T)");
  return static_cast<size_t>(bytes);
}

size_t default_memory_budget() {
  static const size_t budget = [] {
    const char *env = std::getenv("LUMEN_MAX_MEMORY");
    return env && *env ? parse_memory_size(env, "LUMEN_MAX_MEMORY") : physical_memory();
  }();
  return budget;
}

size_t memory_budget() {
  return scoped_budget ? scoped_budget : default_memory_budget();
}

MemoryBudgetScope::MemoryBudgetScope(size_t bytes) : previous_(scoped_budget) {
  if (bytes) scoped_budget = bytes;
}

MemoryBudgetScope::~MemoryBudgetScope() {
  scoped_budget = previous_;
}

void check_memory_budget(size_t bytes, const std::string &what) {
  const size_t budget = memory_budget();
  if (bytes > budget)
    fail(what, " needs ", bytes, " bytes, over the memory budget of ", budget,
         " bytes (max_memory, LUMEN_MAX_MEMORY; by default the machine's memory)");
}

}  // namespace lumen
