// The lower stage of compiling (shared/ARCHITECTURE.md: lower -> place -> insert copies -> plan
// -> freeze): the optimized, device-free graph rewritten into what the devices at hand can run
// well. Today: float16/bfloat16 nodes whose half-precision kernel only a slower backend has (or
// none) run in float32 on a faster one (graph/passes/widen_half_precision.h), and the widened
// graph gets the fusions and layouts float32 models get.
#pragma once

#include <optional>
#include <string_view>

#include "lumen/graph.h"

namespace lumen {

// The lowered graph, or nullopt when `graph` needs no change. A caller pinning a backend
// (`pinned` non-empty) gets the graph as it is.
std::optional<Graph> lower(const Graph &graph, std::string_view pinned, int opt_level);

}  // namespace lumen
