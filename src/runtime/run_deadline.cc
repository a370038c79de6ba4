#include "runtime/run_deadline.h"

#include <chrono>
#include <cstdint>

#include "lumen/error.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

thread_local double timeout_seconds = 0;
thread_local int64_t deadline_ns = 0;  // steady clock; 0: none

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

RunTimeoutScope::RunTimeoutScope(double seconds)
    : previous_seconds_(timeout_seconds), previous_deadline_ns_(deadline_ns) {
  if (seconds <= 0) return;
  const int64_t deadline = now_ns() + static_cast<int64_t>(seconds * 1e9);
  if (deadline_ns == 0 || deadline < deadline_ns) {  // an outer, earlier deadline stays
    deadline_ns = deadline;
    timeout_seconds = seconds;
  }
}

RunTimeoutScope::~RunTimeoutScope() {
  timeout_seconds = previous_seconds_;
  deadline_ns = previous_deadline_ns_;
}

void check_run_deadline(std::string_view op, std::string_view node) {
  if (deadline_ns == 0) return;
  const int64_t now = now_ns();
  if (now > deadline_ns)
    fail("run timed out (timeout ", timeout_seconds, " s, ",
         double(now - deadline_ns) / 1e9 + timeout_seconds, " s gone) before op '", op, "' (node '",
         node, "')");
}

}  // namespace lumen
