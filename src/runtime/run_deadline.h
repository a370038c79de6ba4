// The deadline of RunTimeoutScope (lumen.h), checked by the step loops of every run on the thread.
#pragma once

#include <string_view>

namespace lumen {

// Throws lumen::Error when this thread's run timeout has passed: "run timed out after S s
// (timeout T s), before op 'OP' (node 'NODE')". Cheap when no timeout is set.
void check_run_deadline(std::string_view op, std::string_view node);

}  // namespace lumen
