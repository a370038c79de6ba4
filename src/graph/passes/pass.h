// A graph pass: a named rewrite that reports whether it changed the graph. Passes are idempotent
// and live one per file; pipeline.cc lists them by optimization level.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "lumen/graph.h"

namespace lumen {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites `graph` in place; returns true when anything changed.
  virtual bool run(Graph &graph) = 0;
};

std::unique_ptr<Pass> make_dead_code_elimination();

// The passes run at `opt_level` (0: none, 1: basic clean-up, 2: all), in order.
std::vector<std::unique_ptr<Pass>> passes_for_level(int opt_level);

}  // namespace lumen
