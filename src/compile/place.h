// The place stage of compiling (shared/ARCHITECTURE.md: lower -> place -> insert copies -> plan
// -> freeze): which backend runs a node, and a one-line reason that `lumen inspect --routing` and
// CompiledModel.routing() show. A backend the caller pins runs every node (or compiling fails,
// naming the node); otherwise the highest-priority backend that may be placed automatically and
// has a kernel for the node's op and kernel dtype. The reference backend is never placed
// automatically. No cost model yet: with one device per kind of memory there is nothing to weigh,
// and the reason says what decided.
#pragma once

#include <string>
#include <string_view>

#include "core/backend.h"

namespace lumen {

struct Placement {
  Backend *backend = nullptr;
  std::string reason;  // "cpu: the only device placed automatically with a float32 kernel"
};

// The backend automatic placement picks for `op` with kernel dtype `dtype`: the highest-priority
// one that may be placed automatically and has a kernel; nullptr when none has.
Backend *automatic_backend(std::string_view op, DType dtype);

// Places a node of op `op` whose kernel dtype is `dtype`; `pinned` names a backend or is empty.
// Throws naming the op, node and dtype where no backend may run it.
Placement place_node(std::string_view op, DType dtype, std::string_view pinned,
                     std::string_view node);

}  // namespace lumen
