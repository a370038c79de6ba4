// The insert-copies stage of compiling: given where every step runs (compile/place.h), the copies
// a run needs, exactly at memory-space boundaries. A value is copied into a space once, just
// before the first step there that reads it, and reused by the later ones; graph inputs start where
// the caller's tensors are (IoSpaces: host memory unless CompileOptions say otherwise) and graph
// outputs made elsewhere are copied to where the caller gets them after the last step. Constants
// get no copy step: the freeze stage uploads each once per space that reads it, at compile time.
#pragma once

#include <vector>

#include "compile/place.h"
#include "graph/op_schema.h"

namespace lumen {

struct CopyStep {
  int value = -1;           // into the values of place_steps
  Backend *from = nullptr;  // a backend standing for the source memory space
  Backend *to = nullptr;    // ... and for the destination
};

struct CopyPlan {
  std::vector<std::vector<CopyStep>> before;  // per step: the copies to run just before it
  std::vector<CopyStep> after;                // graph outputs brought to where the caller gets them
};

// The schema copy steps carry in an Executable (op "copy"; not an op of the graph's table).
const OpSchema &copy_step_schema();

CopyPlan insert_copies(const std::vector<PlacementStep> &steps,
                       const std::vector<PlacementValue> &values,
                       const std::vector<Placement> &placements, const IoSpaces &io = {});

}  // namespace lumen
