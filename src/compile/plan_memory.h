// The plan stage of compiling (shared/ARCHITECTURE.md: lower -> place -> insert copies -> plan
// -> freeze): the intermediates of a compiled step list get offsets in one arena per memory space
// from the memory planner (compile/memory_planner.h, which never sees a graph), with views,
// in-place element-wise writes and concat inputs written straight into their concat's output.
#pragma once

#include <vector>

#include "runtime/executable_impl.h"

namespace lumen {

// Plans `impl`'s intermediates (the slots its steps produce that are not graph outputs), where
// every step's output shape is known at compile time (`slot_static`); otherwise leaves it
// unplanned (runs then free each intermediate after its last use). `last_use`: per slot, the last
// step reading it (-1: never released). Refuses, through the memory budget, an arena larger than
// allowed. One memory space only for now: a plan spanning several is left unplanned.
void plan_memory(Executable::Impl &impl, const std::vector<int> &last_use,
                 const std::vector<bool> &slot_static);

}  // namespace lumen
