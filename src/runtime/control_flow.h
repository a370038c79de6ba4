// The executor's runners for control-flow ops (if, loop, scan): each runs the compiled plans of
// its step's subgraphs on the step's inputs and returns the step's outputs.
#pragma once

#include <string_view>

#include "runtime/executable_impl.h"

namespace lumen {

// The runner for `op`, or nullptr when `op` is not a control-flow op.
ControlFlowFn find_control_flow(std::string_view op);

}  // namespace lumen
