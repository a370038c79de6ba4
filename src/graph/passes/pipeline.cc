// The optimization pipeline by level. Adding a pass: its file, a unit test, and a line here.
#include "graph/passes/pass.h"
#include "lumen/error.h"

namespace lumen {

std::vector<std::unique_ptr<Pass>> passes_for_level(int opt_level) {
  if (opt_level < 0 || opt_level > 2) fail("opt_level must be 0, 1 or 2, got ", opt_level);
  std::vector<std::unique_ptr<Pass>> passes;
  if (opt_level >= 1) passes.push_back(make_dead_code_elimination());
  return passes;
}

void Graph::optimize(int opt_level) {
  verify();
  for (auto &pass : passes_for_level(opt_level)) {
    pass->run(*this);
#ifndef NDEBUG
    verify();
#endif
  }
  verify();
}

}  // namespace lumen
